/*
 * fakecuda is a stand-in libcuda.so.1 whose devices are host memory.
 * TestFakeDriver builds it and runs the device tests against it through
 * LD_LIBRARY_PATH, so that every entry point the package binds is
 * exercised where no GPU exists. GOCOMMS_FAKECUDA_DEVICES, read by cuInit,
 * sets the number of devices: 2 by default, at most 8; with 0, cuInit
 * fails as the real driver's does on a machine without a GPU.
 *
 * Device memory is a memfd mapped MAP_SHARED, and its CUdeviceptr is its
 * address; pinned host memory is malloc'd. An IPC memory handle carries
 * (magic, pid, fd, size, offset): cuIpcOpenMemHandle_v2 in another
 * process opens /proc/<pid>/fd/<fd> and maps it, so both processes see
 * the same bytes, and refuses a handle of its own process with
 * CUDA_ERROR_INVALID_CONTEXT, as the driver does. An interprocess event
 * (CU_EVENT_INTERPROCESS) is a pair of counters in a memfd mapping, opened
 * the same way: each record, in any process, takes the next number from
 * one, and running it raises the other to it; a wait is for the number
 * taken by the latest record when it is queued.
 *
 * A stream's work runs lazily, in order: it waits in the stream's queue
 * until something must see it (a synchronize, a wait for an event
 * recorded after it, an operation on the legacy default stream, a free),
 * and a query that finds work pending runs one item, unless another
 * thread is running the stream, and answers CUDA_ERROR_NOT_READY. A
 * caller that reads the results of asynchronous work before waiting for
 * them reads stale bytes, as it would on a GPU.
 * So work that another process waits for runs only when its own process
 * waits for it. A wait for a value in memory (cuStreamWaitValue*), or for
 * an interprocess event recorded in another process, polls the memory
 * for as long as it takes, as a GPU stalls a stream for ever: a wait never
 * met holds the test until its own deadline fails it. Every
 * GOCOMMS_FAKECUDA_WAIT_MS (10000 by default) of waiting, it says on
 * standard error which word it waits for, to be what, so that the failed
 * test names the wait.
 *
 * One mutex guards everything. A polling wait releases it between polls,
 * so that other threads run other streams' work meanwhile: streams of one
 * process that wait for each other's values progress when each is
 * synchronized by its own thread, as ranks of one process do. A stream
 * is run by one thread at a time; a thread that must run a stream that
 * another is running waits for it to be free, then runs what is left.
 * While the mutex is released, anything may be destroyed: streams and
 * events are only marked dead, and a wait reads device memory only with
 * the mutex held and while it is still allocated (a stream whose waited
 * word is freed fails with CUDA_ERROR_ILLEGAL_ADDRESS).
 *
 * It refuses what the driver refuses, and a little more: calls before
 * cuInit, calls with no current context, unknown or destroyed handles,
 * streams and events of a context other than the current one (the driver
 * lets a stream wait for another context's event), pointers and ranges
 * outside every allocation, timing of events never recorded, kernels
 * whose arguments do not lie in device memory. Releasing a primary
 * context's last reference while memory, streams, events or modules made
 * in it are live prints "fakecuda: leak" to standard error: the package
 * frees them first.
 *
 * Modules are PTX text: cuModuleLoadData finds the names of its .entry
 * directives, and cuModuleGetFunction finds those that it can run. It
 * runs the kernels of ../kernels/reduce.cu, which it includes, compiled
 * here as C: a launch queues the kernel, which runs, when its stream's
 * work does, as one host thread playing each thread of the grid in turn.
 * So the tests run the very source the PTX was compiled from.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_ILLEGAL_ADDRESS = 700,
	CUDA_ERROR_LAUNCH_TIMEOUT = 702,
	CUDA_ERROR_NOT_SUPPORTED = 801,

	ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,

	STREAM_NON_BLOCKING = 1,
	EVENT_DISABLE_TIMING = 2,
	EVENT_INTERPROCESS = 4,
	EVENT_FLAGS = 1 | 2 | 4, /* blocking sync, disable timing, interprocess */

	IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1,
	IPC_HANDLE_SIZE = 64,
	IPC_MEM_MAGIC = 0x6d637066,   /* "fpcm" */
	IPC_EVENT_MAGIC = 0x65637066, /* "fpce" */

	STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 1,
	STREAM_WAIT_VALUE_GEQ = 0,
	STREAM_WAIT_VALUE_EQ = 1,
	STREAM_WAIT_VALUE_AND = 2,
	STREAM_WAIT_VALUE_NOR = 3,
	STREAM_WAIT_VALUE_FLUSH = 1 << 30,

	MAX_DEVICES = 8,
	DRIVER_VERSION = 12040,

	MAX_BLOCK = 1024 /* threads per block */
};

/* A queued launch: its arguments, as the kernel's parameters read them. */
struct fake_launch {
	const struct fake_kernel *kernel;
	unsigned int grid, block;
	uintptr_t ptr[3]; /* dst, a, b; or buf; or a fold's table */
	unsigned long long fold[4]; /* a fold's nsrc, first, ndst, off */
	unsigned long long n;
	unsigned char scalar[8];
};

/* A kernel of reduce.cu: nptr pointers to n elements of esize bytes, n,
 * and, for ssize > 0, a scalar of ssize bytes; or, for a fold, its table
 * and the four counts before n. */
struct fake_kernel {
	const char *name;
	int nptr, fold;
	size_t esize, ssize;
	void (*run)(const struct fake_launch *l);
	struct fake_kernel *next;
};

static struct fake_kernel *kernels;

/* What reduce.cu's kernels read as CUDA's built-in variables; they run
 * with mu held, one at a time. */
static struct {
	unsigned int x;
} blockIdx, blockDim, gridDim, threadIdx;

#define FAKE_KERNEL(name_, nptr_, fold_, esize_, ssize_)                        \
	static struct fake_kernel kernel_##name_ = {                            \
		.name = #name_, .nptr = nptr_, .fold = fold_, .esize = esize_,  \
		.ssize = ssize_, .run = run_##name_};                           \
	__attribute__((constructor)) static void register_##name_(void)         \
	{                                                                       \
		kernel_##name_.next = kernels;                                  \
		kernels = &kernel_##name_;                                      \
	}

#define GC_HOST_COMBINE(name, T)                                                \
	static void run_##name(const struct fake_launch *l)                     \
	{                                                                       \
		name((T *)l->ptr[0], (const T *)l->ptr[1], (const T *)l->ptr[2], l->n); \
	}                                                                       \
	FAKE_KERNEL(name, 3, 0, sizeof(T), 0)

#define GC_HOST_FINISH(name, T, S)                                              \
	static void run_##name(const struct fake_launch *l)                     \
	{                                                                       \
		S s;                                                            \
		memcpy(&s, l->scalar, sizeof s);                                \
		name((T *)l->ptr[0], l->n, s);                                  \
	}                                                                       \
	FAKE_KERNEL(name, 1, 0, sizeof(T), sizeof(S))

#define GC_HOST_FOLD(name, T, S)                                                \
	static void run_##name(const struct fake_launch *l)                     \
	{                                                                       \
		S s;                                                            \
		memcpy(&s, l->scalar, sizeof s);                                \
		name((const unsigned long long *)l->ptr[0], l->fold[0], l->fold[1], \
		     l->fold[2], l->fold[3], l->n, s);                          \
	}                                                                       \
	FAKE_KERNEL(name, 1, 1, sizeof(T), sizeof(S))

#include "../../kernels/reduce.cu"

/* run_kernel runs every thread of l's grid. */
static void run_kernel(const struct fake_launch *l)
{
	gridDim.x = l->grid;
	blockDim.x = l->block;
	for (blockIdx.x = 0; blockIdx.x < l->grid; blockIdx.x++)
		for (threadIdx.x = 0; threadIdx.x < l->block; threadIdx.x++)
			l->kernel->run(l);
}

struct fake_ctx {
	int device;
	int refs; /* live while positive */
};

/* Device memory is shared, so that IPC can map it into another process. */
enum alloc_kind { ALLOC_HOST, ALLOC_DEVICE, ALLOC_IPC };

struct fake_alloc {
	struct fake_ctx *ctx;
	char *base;
	size_t size;
	enum alloc_kind kind;
	int fd; /* ALLOC_DEVICE: the memfd that an IPC handle names */
	struct fake_alloc *next;
};

/* The handles' 64 bytes. */
typedef struct {
	char reserved[IPC_HANDLE_SIZE];
} CUipcMemHandle, CUipcEventHandle;

struct fake_ipc {
	uint32_t magic;
	int32_t pid, fd;
	uint32_t pad;
	uint64_t size, offset;
};

/* What an interprocess event shares: the number of the latest record
 * queued in any process, and the highest number run. */
struct fake_shared_event {
	uint64_t recorded, reached;
};

struct fake_stream;

/* Streams and events are never freed, only marked dead, so that queued
 * work and events may still point at them. */
struct fake_event {
	struct fake_ctx *ctx;
	unsigned int flags;
	int live, recorded;
	struct fake_stream *stream; /* of the latest record; NULL: the legacy stream */
	uint64_t seq;               /* the latest record's place in stream */
	double ms;                  /* when the device reached it */
	struct fake_shared_event *shared; /* interprocess; never unmapped, as queued work may use it */
	int fd;                           /* of shared's memfd, for handles; -1 once destroyed */
	uint64_t number;                  /* the shared number of this process's latest record */
	struct fake_event *next;
};

enum op_kind { OP_COPY, OP_RECORD, OP_WAIT, OP_KERNEL, OP_WRITE_VALUE, OP_WAIT_VALUE };

struct fake_op {
	enum op_kind kind;
	uint64_t seq;
	void *dst; /* OP_COPY */
	const void *src;
	size_t n;
	struct fake_event *event;   /* OP_RECORD */
	struct fake_stream *target; /* OP_WAIT: run target up to upto first */
	uint64_t upto;
	struct fake_shared_event *shared; /* OP_WAIT: then poll until shared->reached >= value */
	void *addr;                       /* OP_WRITE_VALUE, OP_WAIT_VALUE: width bytes */
	uint64_t value;                   /* the above; OP_RECORD: the shared number */
	int width;
	unsigned int cond;
	struct fake_launch launch; /* OP_KERNEL */
	struct fake_op *next;
};

/* A stream's head stays queued while it runs, so that done tells what
 * has run. */
struct fake_stream {
	struct fake_ctx *ctx;
	unsigned int flags;
	int live;
	int running; /* a thread runs the head, maybe with mu released */
	struct fake_op *head, *tail;
	uint64_t queued, done; /* the last seq queued, the last run */
	CUresult error;        /* of a wait that failed, for the next synchronize or query */
	struct fake_stream *next;
};

typedef struct fake_ctx *CUcontext;
typedef struct fake_stream *CUstream;
typedef struct fake_event *CUevent;

/* Modules and functions, like streams, are only marked dead. */
struct fake_module {
	struct fake_ctx *ctx;
	int live;
	char **entries; /* the names of its .entry directives */
	size_t nentries;
	struct fake_module *next;
};

struct fake_function {
	struct fake_module *module;
	const struct fake_kernel *kernel;
	struct fake_function *next;
};

typedef struct fake_module *CUmodule;
typedef struct fake_function *CUfunction;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* calls counts the driver calls made since cuInit, in the three 8-byte
 * words of the file GOCOMMS_FAKECUDA_CALLS names, where set: a test reads
 * it to see the host work an operation costs. The first word counts every
 * call but those the others count: the second cuCtxSetCurrent and
 * cuCtxGetCurrent, which only touch the thread's own state, the third cuEventQuery
 * and cuStreamQuery, which a waiting thread polls. Processes that share
 * the file add to it atomically. */
static uint64_t *calls;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER; /* a stream stopped running */
static int initialized, ndevices, wait_ms;
static struct fake_ctx ctxs[MAX_DEVICES];
static struct fake_alloc *allocs;
static struct fake_stream *streams;
static struct fake_event *events;
static struct fake_module *modules;
static struct fake_function *functions;
static __thread struct fake_ctx *current;

#define COUNTED(word, call)                                             \
	do {                                                            \
		CUresult rc_;                                           \
		pthread_mutex_lock(&mu);                                \
		if (calls)                                              \
			__atomic_fetch_add(&calls[word], 1, __ATOMIC_RELAXED); \
		rc_ = (call);                                           \
		pthread_mutex_unlock(&mu);                              \
		return rc_;                                             \
	} while (0)

#define LOCKED(call) COUNTED(0, call)

#define TRY(call)                                                       \
	do {                                                            \
		CUresult rc_ = (call);                                  \
		if (rc_ != CUDA_SUCCESS)                                \
			return rc_;                                     \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static CUresult initialized_device(CUdevice dev)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

/* in checks that a live context is current on this thread. */
static CUresult in(void)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!current || current->refs == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

static struct fake_alloc *find_alloc(const void *base, enum alloc_kind kind)
{
	for (struct fake_alloc *a = allocs; a; a = a->next)
		if (a->base == base && a->kind == kind)
			return a;
	return NULL;
}

/* unlink_alloc takes a off the list of allocations and frees it. */
static void unlink_alloc(struct fake_alloc *a)
{
	for (struct fake_alloc **p = &allocs; *p; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	if (a->kind == ALLOC_HOST) {
		free(a->base);
	} else {
		munmap(a->base, a->size);
		if (a->fd >= 0)
			close(a->fd);
	}
	free(a);
}

static int new_memfd(size_t n)
{
	int fd = memfd_create("fakecuda", MFD_CLOEXEC);

	if (fd >= 0 && ftruncate(fd, (off_t)n) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *map_shared(int fd, size_t n, off_t off)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	return p == MAP_FAILED ? NULL : p;
}

/* open_peer opens another process's memfd, holding at least n bytes past
 * off, as a handle names it; -1 if it cannot. */
static int open_peer(const struct fake_ipc *h, uint64_t n)
{
	char path[64];
	struct stat st;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h->pid, (int)h->fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < h->offset || (uint64_t)st.st_size - h->offset < n) {
		close(fd);
		return -1;
	}
	return fd;
}

/* holds tells whether the word at addr meets cond with v, as the driver
 * defines CU_STREAM_WAIT_VALUE_*. */
static int holds(const void *addr, uint64_t v, int width, unsigned int cond)
{
	uint64_t w, mask = width == 4 ? 0xffffffffu : ~(uint64_t)0;

	if (width == 4)
		w = __atomic_load_n((const uint32_t *)addr, __ATOMIC_SEQ_CST);
	else
		w = __atomic_load_n((const uint64_t *)addr, __ATOMIC_SEQ_CST);
	v &= mask;
	switch (cond) {
	case STREAM_WAIT_VALUE_GEQ:
		return width == 4 ? (int32_t)(uint32_t)(w - v) >= 0 : (int64_t)(w - v) >= 0;
	case STREAM_WAIT_VALUE_EQ:
		return w == v;
	case STREAM_WAIT_VALUE_AND:
		return (w & v) != 0;
	default:
		return (~(w | v) & mask) != 0;
	}
}

static CUresult device_range(CUdeviceptr p, size_t n);

/* cond_names name the conditions of a wait, by value. */
static const char *const cond_names[] = {">=", "==", "& nonzero with", "| not all ones with"};

/* await waits until the word at addr meets cond, saying every wait_ms
 * which wait is still unmet. It releases mu between polls, so that other
 * threads run the work that may write the word. A word in device memory
 * (device) is read only while it is still allocated; an interprocess
 * event's counters are never unmapped. */
static CUresult await(const void *addr, uint64_t v, int width, unsigned int cond, int device)
{
	const struct timespec tick = {0, 200 * 1000};
	double start = now_ms(), told = start;

	for (;;) {
		if (device && device_range((uintptr_t)addr, (size_t)width) != CUDA_SUCCESS)
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		if (holds(addr, v, width, cond))
			return CUDA_SUCCESS;
		if (now_ms() - told >= wait_ms) {
			told = now_ms();
			fprintf(stderr, "fakecuda: a stream has waited %.0f ms for the %d-bit word at %p to be %s %llu; "
				"a GPU waits for ever\n", told - start, 8 * width, addr,
				cond < 4 ? cond_names[cond] : "?", (unsigned long long)v);
		}
		pthread_mutex_unlock(&mu);
		nanosleep(&tick, NULL);
		pthread_mutex_lock(&mu);
	}
}

static void store(void *addr, uint64_t v, int width)
{
	if (width == 4)
		__atomic_store_n((uint32_t *)addr, (uint32_t)v, __ATOMIC_SEQ_CST);
	else
		__atomic_store_n((uint64_t *)addr, v, __ATOMIC_SEQ_CST);
}

/* reach raises e's shared count of records run to number. */
static void reach(struct fake_shared_event *e, uint64_t number)
{
	uint64_t r = __atomic_load_n(&e->reached, __ATOMIC_SEQ_CST);

	while (r < number && !__atomic_compare_exchange_n(&e->reached, &r, number, 0, __ATOMIC_SEQ_CST,
							   __ATOMIC_SEQ_CST))
		;
}

/* device_range checks that [p, p+n) lies in one device allocation. */
static CUresult device_range(CUdeviceptr p, size_t n)
{
	for (struct fake_alloc *a = allocs; a; a = a->next) {
		uintptr_t base = (uintptr_t)a->base;
		if (a->kind != ALLOC_HOST && p >= base && p - base <= a->size && n <= a->size - (p - base))
			return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult stream_of_current(struct fake_stream *s)
{
	for (struct fake_stream *t = streams; t; t = t->next)
		if (t == s && t->live)
			return t->ctx == current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_INVALID_HANDLE;
}

static CUresult event_of_current(struct fake_event *e)
{
	for (struct fake_event *t = events; t; t = t->next)
		if (t == e && t->live)
			return t->ctx == current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_INVALID_HANDLE;
}

static void run_until(struct fake_stream *s, uint64_t upto);

/* run_head runs s's head, which no thread is running, and then takes it
 * off the queue. */
static void run_head(struct fake_stream *s)
{
	struct fake_op *op = s->head;
	CUresult rc;

	s->running = 1;
	switch (op->kind) {
	case OP_COPY:
		memcpy(op->dst, op->src, op->n);
		break;
	case OP_RECORD:
		if (op->event->stream == s && op->event->seq == op->seq)
			op->event->ms = now_ms();
		if (op->event->shared)
			reach(op->event->shared, op->value);
		break;
	case OP_WAIT:
		if (op->target)
			run_until(op->target, op->upto);
		if (op->shared && (rc = await(&op->shared->reached, op->value, 8, STREAM_WAIT_VALUE_GEQ, 0)))
			s->error = rc;
		break;
	case OP_KERNEL:
		run_kernel(&op->launch);
		break;
	case OP_WRITE_VALUE:
		store(op->addr, op->value, op->width);
		break;
	case OP_WAIT_VALUE:
		if ((rc = await(op->addr, op->value, op->width, op->cond, 1)))
			s->error = rc;
		break;
	}
	s->head = op->next;
	if (!s->head)
		s->tail = NULL;
	s->done = op->seq;
	s->running = 0;
	pthread_cond_broadcast(&idle);
	free(op);
}

/* run_until runs s's work up to seq upto, waiting, mu released, while
 * another thread runs s. It need not wait when that thread already ran
 * upto: so two streams that wait for each other's events, which were
 * recorded before the waits were queued, never wait for each other. */
static void run_until(struct fake_stream *s, uint64_t upto)
{
	while (s->done < upto && s->head) {
		if (s->running)
			pthread_cond_wait(&idle, &mu);
		else
			run_head(s);
	}
}

/* run_ready runs what of s can run at once, unless another thread is
 * running s: the device makes progress between queries, and a query does
 * not wait, as a GPU's does not, so it stops at a wait for a value that
 * is not there yet, or for another process's record of an interprocess
 * event that has not run yet. */
static void run_ready(struct fake_stream *s)
{
	struct fake_op *op;

	while ((op = s->head) && !s->running) {
		if (op->kind == OP_WAIT_VALUE && device_range((uintptr_t)op->addr, (size_t)op->width) == CUDA_SUCCESS &&
		    !holds(op->addr, op->value, op->width, op->cond))
			return;
		if (op->kind == OP_WAIT && op->shared && !op->target &&
		    !holds(&op->shared->reached, op->value, 8, STREAM_WAIT_VALUE_GEQ))
			return;
		run_head(s);
	}
}

/* legacy runs what the legacy default stream waits for: all the work of
 * the context's blocking streams. Streams that other threads are running
 * come last, since their waits may be for work on the others. */
static void legacy(struct fake_ctx *ctx)
{
	for (int busy = 0; busy < 2; busy++)
		for (struct fake_stream *s = streams; s; s = s->next)
			if (s->ctx == ctx && !(s->flags & STREAM_NON_BLOCKING) && (busy || !s->running))
				run_until(s, s->queued);
}

static CUresult enqueue(struct fake_stream *s, struct fake_op *tmpl)
{
	struct fake_op *op = malloc(sizeof *op);

	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*op = *tmpl;
	op->seq = ++s->queued;
	op->next = NULL;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	return CUDA_SUCCESS;
}

/* on_stream checks that s is a stream of the current context; for the
 * legacy stream (NULL) it first runs what that waits for. Since legacy
 * may release mu, the checks of the arguments come after it. */
static CUresult on_stream(struct fake_stream *s)
{
	TRY(in());
	if (s)
		return stream_of_current(s);
	legacy(current);
	return in(); /* the context may have been released meanwhile */
}

/* copy queues a copy on stream s, or runs it at once on the legacy
 * stream (NULL), which on_stream readied. */
static CUresult copy(void *dst, const void *src, size_t n, struct fake_stream *s)
{
	struct fake_op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};

	if (!s) {
		memcpy(dst, src, n);
		return CUDA_SUCCESS;
	}
	return enqueue(s, &op);
}

static int event_reached(const struct fake_event *e)
{
	if (e->shared)
		return __atomic_load_n(&e->shared->reached, __ATOMIC_SEQ_CST) >=
		       __atomic_load_n(&e->shared->recorded, __ATOMIC_SEQ_CST);
	return !e->recorded || !e->stream || e->stream->done >= e->seq;
}

/* local tells whether the latest record of e, numbered number, is this
 * process's, queued on e->stream. */
static int local(const struct fake_event *e, uint64_t number)
{
	return e->stream && (!e->shared || e->number == number);
}

/* take returns, and clears, the error of a wait on s that timed out. */
static CUresult take(struct fake_stream *s)
{
	CUresult rc = s->error;

	s->error = CUDA_SUCCESS;
	return rc;
}

/* Initialization and devices. */

static const struct {
	CUresult code;
	const char *name, *text;
} results[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	{CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static CUresult error_text(CUresult code, const char **out, int name)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
		if (results[i].code == code) {
			*out = name ? results[i].name : results[i].text;
			return CUDA_SUCCESS;
		}
	*out = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult code, const char **name) { return error_text(code, name, 1); }

CUresult cuGetErrorString(CUresult code, const char **text) { return error_text(code, text, 0); }

/* count_calls maps the counter of calls from the file path names. */
static void count_calls(const char *path)
{
	int fd;
	void *m;

	if (!path || !*path || calls)
		return;
	fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 3 * sizeof *calls) != 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	m = mmap(NULL, 3 * sizeof *calls, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m != MAP_FAILED)
		calls = m;
}

static CUresult init(unsigned int flags)
{
	const char *env = getenv("GOCOMMS_FAKECUDA_DEVICES");
	const char *wait = getenv("GOCOMMS_FAKECUDA_WAIT_MS");
	int n = env && *env ? atoi(env) : 2;

	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (initialized)
		return CUDA_SUCCESS;
	if (n <= 0)
		return CUDA_ERROR_NO_DEVICE;
	ndevices = n < MAX_DEVICES ? n : MAX_DEVICES;
	wait_ms = wait && *wait ? atoi(wait) : 10000;
	count_calls(getenv("GOCOMMS_FAKECUDA_CALLS"));
	for (int i = 0; i < ndevices; i++)
		ctxs[i].device = i;
	initialized = 1;
	return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) { LOCKED(init(flags)); }

CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = DRIVER_VERSION;
	return CUDA_SUCCESS;
}

static CUresult device_count(int *count)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = ndevices;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) { LOCKED(device_count(count)); }

static CUresult device_get(CUdevice *dev, int ordinal)
{
	TRY(initialized_device(ordinal));
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) { LOCKED(device_get(dev, ordinal)); }

static CUresult device_name(char *name, int len, CUdevice dev)
{
	TRY(initialized_device(dev));
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "Fake CUDA Device %d", dev);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) { LOCKED(device_name(name, len, dev)); }

static CUresult device_attribute(int *value, int attribute, CUdevice dev)
{
	TRY(initialized_device(dev));
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attribute) {
	case ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*value = 9;
		return CUDA_SUCCESS;
	case ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		*value = 0;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev)
{
	LOCKED(device_attribute(value, attribute, dev));
}

static CUresult device_total_mem(size_t *bytes, CUdevice dev)
{
	TRY(initialized_device(dev));
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = (size_t)(16 + dev) << 30;
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) { LOCKED(device_total_mem(bytes, dev)); }

static CUresult device_pci_bus_id(char *id, int len, CUdevice dev)
{
	TRY(initialized_device(dev));
	if (!id || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(id, (size_t)len, "0000:%02x:00.0", 0x41 + dev);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev) { LOCKED(device_pci_bus_id(id, len, dev)); }

/* Primary contexts. */

static CUresult primary_retain(CUcontext *ctx, CUdevice dev)
{
	TRY(initialized_device(dev));
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	ctxs[dev].refs++;
	*ctx = &ctxs[dev];
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) { LOCKED(primary_retain(ctx, dev)); }

/* reap frees what ctx still holds as its last reference goes, and says so. */
static void reap(struct fake_ctx *ctx)
{
	int nalloc = 0, nstream = 0, nevent = 0, nmodule = 0;

	for (struct fake_stream *s = streams; s; s = s->next)
		if (s->ctx == ctx && s->live) {
			run_until(s, s->queued);
			s->live = 0;
			nstream++;
		}
	for (struct fake_event *e = events; e; e = e->next)
		if (e->ctx == ctx && e->live) {
			e->live = 0;
			if (e->fd >= 0)
				close(e->fd);
			e->fd = -1;
			nevent++;
		}
	for (struct fake_module *m = modules; m; m = m->next)
		if (m->ctx == ctx && m->live) {
			m->live = 0;
			nmodule++;
		}
	for (struct fake_alloc *a = allocs, *next; a; a = next) {
		next = a->next;
		if (a->ctx == ctx) {
			unlink_alloc(a);
			nalloc++;
		}
	}
	if (nalloc || nstream || nevent || nmodule)
		fprintf(stderr, "fakecuda: leak: device %d's primary context released with %d allocations, "
			"%d streams, %d events and %d modules live\n", ctx->device, nalloc, nstream, nevent,
			nmodule);
}

static CUresult primary_release(CUdevice dev)
{
	TRY(initialized_device(dev));
	if (ctxs[dev].refs == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (--ctxs[dev].refs == 0)
		reap(&ctxs[dev]);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { LOCKED(primary_release(dev)); }

static CUresult set_current(CUcontext ctx)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ctx && (ctx < ctxs || ctx >= ctxs + ndevices || ctx->refs == 0))
		return CUDA_ERROR_INVALID_CONTEXT;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) { COUNTED(1, set_current(ctx)); }

static CUresult get_current(CUcontext *ctx)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	*ctx = current;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) { COUNTED(1, get_current(ctx)); }

static CUresult ctx_get_device(CUdevice *dev)
{
	TRY(in());
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	*dev = current->device;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *dev) { LOCKED(ctx_get_device(dev)); }

/* Memory. */

/* add_alloc lists memory at base, n bytes of kind; it owns fd. */
static CUresult add_alloc(void *base, size_t n, enum alloc_kind kind, int fd)
{
	struct fake_alloc *a = malloc(sizeof *a);

	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->ctx = current;
	a->base = base;
	a->size = n;
	a->kind = kind;
	a->fd = fd;
	a->next = allocs;
	allocs = a;
	return CUDA_SUCCESS;
}

static CUresult alloc(void **out, size_t n, int host)
{
	void *base;
	int fd = -1;

	TRY(in());
	if (!out || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (host) {
		base = malloc(n);
	} else {
		fd = new_memfd(n);
		base = fd < 0 ? NULL : map_shared(fd, n, 0);
	}
	if (!base || add_alloc(base, n, host ? ALLOC_HOST : ALLOC_DEVICE, fd) != CUDA_SUCCESS) {
		if (host)
			free(base);
		else if (base)
			munmap(base, n);
		if (fd >= 0)
			close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = base;
	return CUDA_SUCCESS;
}

static CUresult mem_alloc(CUdeviceptr *ptr, size_t n)
{
	void *p;

	if (!ptr)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(alloc(&p, n, 0));
	*ptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t n) { LOCKED(mem_alloc(ptr, n)); }

CUresult cuMemAllocHost_v2(void **ptr, size_t n) { LOCKED(alloc(ptr, n, 1)); }

/* release frees an allocation, or unmaps an opened one, once the work
 * that may use it has run. */
static CUresult release(const void *base, enum alloc_kind kind)
{
	struct fake_alloc *a;

	TRY(in());
	a = find_alloc(base, kind);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	legacy(a->ctx);
	/* Another thread may have freed it while legacy waited. */
	a = find_alloc(base, kind);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	unlink_alloc(a);
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) { LOCKED(release((const void *)(uintptr_t)ptr, ALLOC_DEVICE)); }

CUresult cuMemFreeHost(void *ptr) { LOCKED(release(ptr, ALLOC_HOST)); }

static CUresult address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	TRY(in());
	for (struct fake_alloc *a = allocs; a; a = a->next)
		if (a->kind != ALLOC_HOST && p >= (uintptr_t)a->base && p - (uintptr_t)a->base < a->size) {
			if (base)
				*base = (uintptr_t)a->base;
			if (size)
				*size = a->size;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	LOCKED(address_range(base, size, p));
}

/* Interprocess memory. */

static CUresult ipc_get_mem(CUipcMemHandle *out, CUdeviceptr p)
{
	struct fake_alloc *a;
	struct fake_ipc h = {.magic = IPC_MEM_MAGIC};

	TRY(in());
	a = find_alloc((const void *)(uintptr_t)p, ALLOC_DEVICE);
	if (!out || !a)
		return CUDA_ERROR_INVALID_VALUE;
	h.pid = getpid();
	h.fd = a->fd;
	h.size = a->size;
	memset(out, 0, sizeof *out);
	memcpy(out, &h, sizeof h);
	return CUDA_SUCCESS;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) { LOCKED(ipc_get_mem(h, p)); }

static CUresult ipc_open_mem(CUdeviceptr *out, CUipcMemHandle handle, unsigned int flags)
{
	struct fake_ipc h;
	void *base;
	int fd;

	TRY(in());
	memcpy(&h, &handle, sizeof h);
	if (!out || flags != IPC_MEM_LAZY_ENABLE_PEER_ACCESS || h.magic != IPC_MEM_MAGIC || h.size == 0 ||
	    h.size > SIZE_MAX || h.offset % (uint64_t)sysconf(_SC_PAGESIZE) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (h.pid == getpid())
		return CUDA_ERROR_INVALID_CONTEXT;
	fd = open_peer(&h, h.size);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	base = map_shared(fd, (size_t)h.size, (off_t)h.offset);
	close(fd);
	if (!base)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (add_alloc(base, (size_t)h.size, ALLOC_IPC, -1) != CUDA_SUCCESS) {
		munmap(base, (size_t)h.size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = (uintptr_t)base;
	return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
	LOCKED(ipc_open_mem(p, h, flags));
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p) { LOCKED(release((const void *)(uintptr_t)p, ALLOC_IPC)); }

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int async)
{
	s = async ? s : NULL;
	TRY(on_stream(s));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(dst, n));
	if (!src)
		return CUDA_ERROR_INVALID_VALUE;
	return copy((void *)(uintptr_t)dst, src, n,  s);
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, int async)
{
	s = async ? s : NULL;
	TRY(on_stream(s));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(src, n));
	if (!dst)
		return CUDA_ERROR_INVALID_VALUE;
	return copy(dst, (const void *)(uintptr_t)src, n,  s);
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int async)
{
	s = async ? s : NULL;
	TRY(on_stream(s));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(dst, n));
	TRY(device_range(src, n));
	return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,  s);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { LOCKED(htod(dst, src, n, NULL, 0)); }

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { LOCKED(dtoh(dst, src, n, NULL, 0)); }

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) { LOCKED(dtod(dst, src, n, NULL, 0)); }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	LOCKED(htod(dst, src, n, s, 1));
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	LOCKED(dtoh(dst, src, n, s, 1));
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	LOCKED(dtod(dst, src, n, s, 1));
}

static CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n)
{
	TRY(on_stream(NULL));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(dst, n));
	memset((void *)(uintptr_t)dst, value, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) { LOCKED(memset_d8(dst, value, n)); }

/* Streams. */

static CUresult stream_create(CUstream *out, unsigned int flags)
{
	struct fake_stream *s;

	TRY(in());
	if (!out || (flags & ~(unsigned int)STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof *s);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->ctx = current;
	s->flags = flags;
	s->live = 1;
	s->next = streams;
	streams = s;
	*out = s;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) { LOCKED(stream_create(s, flags)); }

static CUresult stream_destroy(CUstream s)
{
	TRY(in());
	TRY(stream_of_current(s));
	run_until(s, s->queued); /* the work queued still completes */
	s->live = 0;
	return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream s) { LOCKED(stream_destroy(s)); }

static CUresult stream_synchronize(CUstream s)
{
	TRY(in());
	if (!s) {
		legacy(current);
		return CUDA_SUCCESS;
	}
	TRY(stream_of_current(s));
	run_until(s, s->queued);
	return take(s);
}

CUresult cuStreamSynchronize(CUstream s) { LOCKED(stream_synchronize(s)); }

static CUresult stream_query(CUstream s)
{
	TRY(in());
	TRY(stream_of_current(s));
	run_ready(s);
	if (s->done == s->queued)
		return take(s);
	return CUDA_ERROR_NOT_READY;
}

CUresult cuStreamQuery(CUstream s) { COUNTED(2, stream_query(s)); }

static CUresult stream_wait_event(CUstream s, CUevent e, unsigned int flags)
{
	struct fake_op op = {.kind = OP_WAIT};

	TRY(in());
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(event_of_current(e));
	if (s)
		TRY(stream_of_current(s));
	if (e->shared) {
		op.shared = e->shared;
		op.value = __atomic_load_n(&e->shared->recorded, __ATOMIC_SEQ_CST);
	}
	if (event_reached(e) || (local(e, op.value) && e->stream == s))
		return CUDA_SUCCESS;
	if (local(e, op.value)) {
		op.target = e->stream;
		op.upto = e->seq;
	}
	if (!s) {
		if (op.target)
			run_until(op.target, op.upto);
		return op.shared ? await(&op.shared->reached, op.value, 8, STREAM_WAIT_VALUE_GEQ, 0) : CUDA_SUCCESS;
	}
	return enqueue(s, &op);
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) { LOCKED(stream_wait_event(s, e, flags)); }

/* Events. */

/* add_event lists a new event; an interprocess one shares the memfd fd,
 * which it owns. */
static CUresult add_event(CUevent *out, unsigned int flags, int fd)
{
	struct fake_event *e = calloc(1, sizeof *e);

	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->fd = fd;
	if (fd >= 0 && !(e->shared = map_shared(fd, sizeof *e->shared, 0))) {
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	e->ctx = current;
	e->flags = flags;
	e->live = 1;
	e->next = events;
	events = e;
	*out = e;
	return CUDA_SUCCESS;
}

static CUresult event_create(CUevent *out, unsigned int flags)
{
	CUresult rc;
	int fd = -1;

	TRY(in());
	if (!out || (flags & ~(unsigned int)EVENT_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & EVENT_INTERPROCESS) {
		if (!(flags & EVENT_DISABLE_TIMING))
			return CUDA_ERROR_INVALID_VALUE;
		fd = new_memfd(sizeof(struct fake_shared_event));
		if (fd < 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = add_event(out, flags, fd);
	if (rc != CUDA_SUCCESS && fd >= 0)
		close(fd);
	return rc;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) { LOCKED(event_create(e, flags)); }

static CUresult event_record(CUevent e, CUstream s)
{
	struct fake_op op = {.kind = OP_RECORD, .event = e};

	TRY(in());
	TRY(event_of_current(e));
	if (s)
		TRY(stream_of_current(s));
	if (e->shared)
		op.value = e->number = __atomic_add_fetch(&e->shared->recorded, 1, __ATOMIC_SEQ_CST);
	if (!s) {
		legacy(current);
		e->recorded = 1;
		e->stream = NULL;
		e->ms = now_ms();
		if (e->shared)
			reach(e->shared, op.value);
		return CUDA_SUCCESS;
	}
	TRY(enqueue(s, &op));
	e->recorded = 1;
	e->stream = s;
	e->seq = s->queued;
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) { LOCKED(event_record(e, s)); }

static CUresult event_synchronize(CUevent e)
{
	uint64_t number;

	TRY(in());
	TRY(event_of_current(e));
	if (event_reached(e))
		return CUDA_SUCCESS;
	number = e->shared ? __atomic_load_n(&e->shared->recorded, __ATOMIC_SEQ_CST) : 0;
	if (local(e, number))
		run_until(e->stream, e->seq);
	return e->shared ? await(&e->shared->reached, number, 8, STREAM_WAIT_VALUE_GEQ, 0) : CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) { LOCKED(event_synchronize(e)); }

static CUresult event_query(CUevent e)
{
	TRY(in());
	TRY(event_of_current(e));
	if (event_reached(e))
		return CUDA_SUCCESS;
	if (e->stream && e->stream->done < e->seq)
		run_ready(e->stream);
	return event_reached(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventQuery(CUevent e) { COUNTED(2, event_query(e)); }

static CUresult event_destroy(CUevent e)
{
	TRY(in());
	TRY(event_of_current(e));
	e->live = 0;
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e) { LOCKED(event_destroy(e)); }

static CUresult event_elapsed(float *ms, CUevent start, CUevent end)
{
	TRY(in());
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(event_of_current(start));
	TRY(event_of_current(end));
	if (!start->recorded || !end->recorded || ((start->flags | end->flags) & EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!event_reached(start) || !event_reached(end))
		return CUDA_ERROR_NOT_READY;
	*ms = (float)(end->ms - start->ms);
	return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { LOCKED(event_elapsed(ms, start, end)); }

/* Interprocess events. */

static CUresult ipc_get_event(CUipcEventHandle *out, CUevent e)
{
	struct fake_ipc h = {.magic = IPC_EVENT_MAGIC, .size = sizeof(struct fake_shared_event)};

	TRY(in());
	TRY(event_of_current(e));
	if (!e->shared)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	h.pid = getpid();
	h.fd = e->fd;
	memset(out, 0, sizeof *out);
	memcpy(out, &h, sizeof h);
	return CUDA_SUCCESS;
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *h, CUevent e) { LOCKED(ipc_get_event(h, e)); }

static CUresult ipc_open_event(CUevent *out, CUipcEventHandle handle)
{
	struct fake_ipc h;
	CUresult rc;
	int fd;

	TRY(in());
	memcpy(&h, &handle, sizeof h);
	if (!out || h.magic != IPC_EVENT_MAGIC || h.offset != 0 || h.size != sizeof(struct fake_shared_event))
		return CUDA_ERROR_INVALID_VALUE;
	fd = open_peer(&h, h.size);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = add_event(out, EVENT_DISABLE_TIMING | EVENT_INTERPROCESS, fd);
	if (rc != CUDA_SUCCESS)
		close(fd);
	return rc;
}

CUresult cuIpcOpenEventHandle(CUevent *e, CUipcEventHandle h) { LOCKED(ipc_open_event(e, h)); }

/* Stream memory operations. */

static CUresult write_value(CUstream s, CUdeviceptr addr, uint64_t value, int width, unsigned int flags)
{
	struct fake_op op = {.kind = OP_WRITE_VALUE, .addr = (void *)(uintptr_t)addr, .value = value,
			     .width = width};

	TRY(on_stream(s));
	if ((flags & ~(unsigned int)STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) || addr % (unsigned int)width)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(device_range(addr, (size_t)width));
	if (!s) {
		store(op.addr, value, width);
		return CUDA_SUCCESS;
	}
	return enqueue(s, &op);
}

static CUresult wait_value(CUstream s, CUdeviceptr addr, uint64_t value, int width, unsigned int flags)
{
	struct fake_op op = {.kind = OP_WAIT_VALUE, .addr = (void *)(uintptr_t)addr, .value = value,
			     .width = width, .cond = flags & ~(unsigned int)STREAM_WAIT_VALUE_FLUSH};

	TRY(on_stream(s));
	if (op.cond > STREAM_WAIT_VALUE_NOR || addr % (unsigned int)width)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(device_range(addr, (size_t)width));
	if (!s)
		return await(op.addr, value, width, op.cond, 1);
	return enqueue(s, &op);
}

CUresult cuStreamWriteValue32_v2(CUstream s, CUdeviceptr addr, uint32_t value, unsigned int flags)
{
	LOCKED(write_value(s, addr, value, 4, flags));
}

CUresult cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, uint64_t value, unsigned int flags)
{
	LOCKED(write_value(s, addr, value, 8, flags));
}

CUresult cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, uint32_t value, unsigned int flags)
{
	LOCKED(wait_value(s, addr, value, 4, flags));
}

CUresult cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, uint64_t value, unsigned int flags)
{
	LOCKED(wait_value(s, addr, value, 8, flags));
}

/* CUstreamBatchMemOpParams, as cuda.h lays it out: the 32- and 64-bit
 * writes and waits, which share their layout, in 48 bytes. */
typedef union {
	unsigned int operation;
	struct {
		unsigned int operation;
		CUdeviceptr address;
		uint64_t value64; /* the 32-bit operations read its first 4 bytes */
		unsigned int flags;
		CUdeviceptr alias;
	} value;
	uint64_t pad[6];
} CUstreamBatchMemOpParams;

enum {
	MEM_OP_WAIT_VALUE_32 = 1,
	MEM_OP_WRITE_VALUE_32 = 2,
	MEM_OP_WAIT_VALUE_64 = 4,
	MEM_OP_WRITE_VALUE_64 = 5
};

/* batch_mem_op queues ops in order, refusing the whole batch if one of
 * them is of a kind it does not run. */
static CUresult batch_mem_op(CUstream s, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags)
{
	if (!ops || count == 0 || count >= 256 || flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < count; i++)
		if (ops[i].operation != MEM_OP_WAIT_VALUE_32 && ops[i].operation != MEM_OP_WRITE_VALUE_32 &&
		    ops[i].operation != MEM_OP_WAIT_VALUE_64 && ops[i].operation != MEM_OP_WRITE_VALUE_64)
			return CUDA_ERROR_NOT_SUPPORTED;
	for (unsigned int i = 0; i < count; i++) {
		const CUstreamBatchMemOpParams *op = &ops[i];
		int width = op->operation == MEM_OP_WAIT_VALUE_64 || op->operation == MEM_OP_WRITE_VALUE_64 ? 8 : 4;
		uint64_t v = width == 8 ? op->value.value64 : (uint32_t)op->value.value64;

		if (op->operation == MEM_OP_WRITE_VALUE_32 || op->operation == MEM_OP_WRITE_VALUE_64)
			TRY(write_value(s, op->value.address, v, width, op->value.flags));
		else
			TRY(wait_value(s, op->value.address, v, width, op->value.flags));
	}
	return CUDA_SUCCESS;
}

CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags)
{
	LOCKED(batch_mem_op(s, count, ops, flags));
}

/* Modules and kernels. */

static CUresult module_of_current(struct fake_module *m)
{
	for (struct fake_module *t = modules; t; t = t->next)
		if (t == m && t->live)
			return t->ctx == current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_INVALID_HANDLE;
}

static void free_module(struct fake_module *m)
{
	for (size_t i = 0; i < m->nentries; i++)
		free(m->entries[i]);
	free(m->entries);
	free(m);
}

/* module_load reads the names of the .entry directives of PTX text. */
static CUresult module_load(CUmodule *out, const void *image)
{
	const char *ptx = image, *p;
	struct fake_module *m;

	TRY(in());
	if (!out || !ptx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!strstr(ptx, ".version") || !strstr(ptx, ".target"))
		return CUDA_ERROR_INVALID_IMAGE;
	m = calloc(1, sizeof *m);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (p = strstr(ptx, ".entry"); p; p = strstr(p, ".entry")) {
		size_t len;
		char **grown;

		p += strlen(".entry");
		p += strspn(p, " \t\r\n");
		len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$");
		grown = realloc(m->entries, (m->nentries + 1) * sizeof *grown);
		if (!grown || !(grown[m->nentries] = strndup(p, len))) {
			m->entries = grown ? grown : m->entries;
			free_module(m);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		m->entries = grown;
		m->nentries++;
	}
	m->ctx = current;
	m->live = 1;
	m->next = modules;
	modules = m;
	*out = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) { LOCKED(module_load(m, image)); }

static CUresult module_unload(CUmodule m)
{
	TRY(in());
	TRY(module_of_current(m));
	legacy(current); /* its kernels may be queued */
	m->live = 0;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) { LOCKED(module_unload(m)); }

static CUresult module_function(CUfunction *out, CUmodule m, const char *name)
{
	const struct fake_kernel *k;
	struct fake_function *f;
	size_t i;

	TRY(in());
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(module_of_current(m));
	for (i = 0; i < m->nentries && strcmp(m->entries[i], name) != 0; i++)
		;
	for (k = kernels; k && strcmp(k->name, name) != 0; k = k->next)
		;
	if (i == m->nentries || !k)
		return CUDA_ERROR_NOT_FOUND;
	f = calloc(1, sizeof *f);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->module = m;
	f->kernel = k;
	f->next = functions;
	functions = f;
	*out = f;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { LOCKED(module_function(f, m, name)); }

static CUresult function_of_current(struct fake_function *f)
{
	for (struct fake_function *t = functions; t; t = t->next)
		if (t == f)
			return module_of_current(f->module);
	return CUDA_ERROR_INVALID_HANDLE;
}

/* fold_ranges checks a fold's table and every array it names, as a GPU
 * would fault on an address outside memory: the table is read now, as the
 * kernels read it when they run, and it does not change in between. */
static CUresult fold_ranges(const struct fake_launch *l)
{
	unsigned long long nsrc = l->fold[0], first = l->fold[1], ndst = l->fold[2], off = l->fold[3];
	unsigned long long rows = nsrc > first + ndst ? nsrc : first + ndst;
	const unsigned long long *tab = (const unsigned long long *)l->ptr[0];

	if (nsrc == 0 || first > 1024 || ndst > 1024 || rows > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(device_range(l->ptr[0], rows * sizeof *tab));
	for (unsigned long long q = 0; q < rows; q++)
		TRY(device_range(tab[q] + off, l->n * l->kernel->esize));
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		       unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
		       void **extra)
{
	struct fake_op op = {.kind = OP_KERNEL};
	struct fake_launch *l = &op.launch;
	const struct fake_kernel *k;
	int i = 0;

	TRY(on_stream(s));
	TRY(function_of_current(f));
	k = f->kernel;
	/* The kernels use one dimension only, and no shared memory. */
	if (gx == 0 || bx == 0 || bx > MAX_BLOCK || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared ||
	    !params || extra)
		return CUDA_ERROR_INVALID_VALUE;
	l->kernel = k;
	l->grid = gx;
	l->block = bx;
	for (; i < k->nptr; i++) {
		CUdeviceptr p;
		memcpy(&p, params[i], sizeof p);
		l->ptr[i] = (uintptr_t)p;
	}
	for (int j = 0; k->fold && j < 4; j++)
		memcpy(&l->fold[j], params[i++], sizeof l->fold[j]);
	memcpy(&l->n, params[i++], sizeof l->n);
	if (k->ssize)
		memcpy(l->scalar, params[i], k->ssize);
	if (l->n > SIZE_MAX / k->esize)
		return CUDA_ERROR_INVALID_VALUE;
	if (k->fold)
		TRY(fold_ranges(l));
	else
		for (i = 0; i < k->nptr; i++)
			TRY(device_range(l->ptr[i], l->n * k->esize));
	if (!s) {
		run_kernel(l);
		return CUDA_SUCCESS;
	}
	return enqueue(s, &op);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
			unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
			void **extra)
{
	LOCKED(launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra));
}
