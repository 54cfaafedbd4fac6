/*
 * fakecuda is a stand-in libcuda.so.1 whose devices are host memory.
 * TestFakeDriver builds it and runs the device tests against it through
 * LD_LIBRARY_PATH, so that every entry point the package binds is
 * exercised where no GPU exists. GOCOMMS_FAKECUDA_DEVICES, read by cuInit,
 * sets the number of devices: 2 by default, at most 8; with 0, cuInit
 * fails as the real driver's does on a machine without a GPU.
 *
 * Device memory is malloc'd, and its CUdeviceptr is its address. A
 * stream's work runs lazily, in order: it waits in the stream's queue
 * until something must see it (a synchronize, a wait for an event
 * recorded after it, an operation on the legacy default stream, a free),
 * and a query that finds work pending runs one item and answers
 * CUDA_ERROR_NOT_READY. A caller that reads the results of asynchronous
 * work before waiting for them reads stale bytes, as it would on a GPU.
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
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

	ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,

	STREAM_NON_BLOCKING = 1,
	EVENT_DISABLE_TIMING = 2,
	EVENT_FLAGS = 1 | 2, /* blocking sync, disable timing */

	MAX_DEVICES = 8,
	DRIVER_VERSION = 12040,

	MAX_BLOCK = 1024 /* threads per block */
};

/* A queued launch: its arguments, as the kernel's parameters read them. */
struct fake_launch {
	const struct fake_kernel *kernel;
	unsigned int grid, block;
	uintptr_t ptr[3]; /* dst, a, b; or buf */
	unsigned long long n;
	unsigned char scalar[8];
};

/* A kernel of reduce.cu: nptr pointers to n elements of esize bytes, n,
 * and, for ssize > 0, a scalar of ssize bytes. */
struct fake_kernel {
	const char *name;
	int nptr;
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

#define FAKE_KERNEL(name_, nptr_, esize_, ssize_)                               \
	static struct fake_kernel kernel_##name_ = {                            \
		.name = #name_, .nptr = nptr_, .esize = esize_, .ssize = ssize_, \
		.run = run_##name_};                                            \
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
	FAKE_KERNEL(name, 3, sizeof(T), 0)

#define GC_HOST_FINISH(name, T, S)                                              \
	static void run_##name(const struct fake_launch *l)                     \
	{                                                                       \
		S s;                                                            \
		memcpy(&s, l->scalar, sizeof s);                                \
		name((T *)l->ptr[0], l->n, s);                                  \
	}                                                                       \
	FAKE_KERNEL(name, 1, sizeof(T), sizeof(S))

#include "../kernels/reduce.cu"

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

struct fake_alloc {
	struct fake_ctx *ctx;
	char *base;
	size_t size;
	int host;
	struct fake_alloc *next;
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
	struct fake_event *next;
};

enum op_kind { OP_COPY, OP_RECORD, OP_WAIT, OP_KERNEL };

struct fake_op {
	enum op_kind kind;
	uint64_t seq;
	void *dst; /* OP_COPY */
	const void *src;
	size_t n;
	struct fake_event *event;   /* OP_RECORD */
	struct fake_stream *target; /* OP_WAIT: run target up to upto first */
	uint64_t upto;
	struct fake_launch launch; /* OP_KERNEL */
	struct fake_op *next;
};

struct fake_stream {
	struct fake_ctx *ctx;
	unsigned int flags;
	int live;
	struct fake_op *head, *tail;
	uint64_t queued, done; /* the last seq queued, the last run */
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
static int initialized, ndevices;
static struct fake_ctx ctxs[MAX_DEVICES];
static struct fake_alloc *allocs;
static struct fake_stream *streams;
static struct fake_event *events;
static struct fake_module *modules;
static struct fake_function *functions;
static __thread struct fake_ctx *current;

#define LOCKED(call)                                                    \
	do {                                                            \
		CUresult rc_;                                           \
		pthread_mutex_lock(&mu);                                \
		rc_ = (call);                                           \
		pthread_mutex_unlock(&mu);                              \
		return rc_;                                             \
	} while (0)

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

static struct fake_alloc *find_alloc(const void *base, int host)
{
	for (struct fake_alloc *a = allocs; a; a = a->next)
		if (a->base == base && a->host == host)
			return a;
	return NULL;
}

/* device_range checks that [p, p+n) lies in one device allocation. */
static CUresult device_range(CUdeviceptr p, size_t n)
{
	for (struct fake_alloc *a = allocs; a; a = a->next) {
		uintptr_t base = (uintptr_t)a->base;
		if (!a->host && p >= base && p - base <= a->size && n <= a->size - (p - base))
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

static void run_one(struct fake_stream *s)
{
	struct fake_op *op = s->head;

	if (!op)
		return;
	s->head = op->next;
	if (!s->head)
		s->tail = NULL;
	switch (op->kind) {
	case OP_COPY:
		memcpy(op->dst, op->src, op->n);
		break;
	case OP_RECORD:
		if (op->event->stream == s && op->event->seq == op->seq)
			op->event->ms = now_ms();
		break;
	case OP_WAIT:
		run_until(op->target, op->upto);
		break;
	case OP_KERNEL:
		run_kernel(&op->launch);
		break;
	}
	s->done = op->seq;
	free(op);
}

static void run_until(struct fake_stream *s, uint64_t upto)
{
	while (s->done < upto && s->head)
		run_one(s);
}

/* legacy runs what the legacy default stream waits for: all the work of
 * the context's blocking streams. */
static void legacy(struct fake_ctx *ctx)
{
	for (struct fake_stream *s = streams; s; s = s->next)
		if (s->ctx == ctx && !(s->flags & STREAM_NON_BLOCKING))
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

/* copy runs a copy on stream s, or at once on the legacy stream (NULL). */
static CUresult copy(void *dst, const void *src, size_t n, struct fake_stream *s)
{
	struct fake_op op = {.kind = OP_COPY, .dst = dst, .src = src, .n = n};

	if (!s) {
		legacy(current);
		memcpy(dst, src, n);
		return CUDA_SUCCESS;
	}
	return enqueue(s, &op);
}

static int event_reached(const struct fake_event *e)
{
	return !e->recorded || !e->stream || e->stream->done >= e->seq;
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

static CUresult init(unsigned int flags)
{
	const char *env = getenv("GOCOMMS_FAKECUDA_DEVICES");
	int n = env && *env ? atoi(env) : 2;

	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (initialized)
		return CUDA_SUCCESS;
	if (n <= 0)
		return CUDA_ERROR_NO_DEVICE;
	ndevices = n < MAX_DEVICES ? n : MAX_DEVICES;
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
			nevent++;
		}
	for (struct fake_module *m = modules; m; m = m->next)
		if (m->ctx == ctx && m->live) {
			m->live = 0;
			nmodule++;
		}
	for (struct fake_alloc **p = &allocs; *p;) {
		struct fake_alloc *a = *p;
		if (a->ctx != ctx) {
			p = &a->next;
			continue;
		}
		*p = a->next;
		free(a->base);
		free(a);
		nalloc++;
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

CUresult cuCtxSetCurrent(CUcontext ctx) { LOCKED(set_current(ctx)); }

/* Memory. */

static CUresult alloc(void **out, size_t n, int host)
{
	struct fake_alloc *a;

	TRY(in());
	if (!out || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	a = malloc(sizeof *a);
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->base = malloc(n);
	if (!a->base) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->ctx = current;
	a->size = n;
	a->host = host;
	a->next = allocs;
	allocs = a;
	*out = a->base;
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

/* release frees an allocation once the work that may use it has run. */
static CUresult release(const void *base, int host)
{
	struct fake_alloc *a;

	TRY(in());
	a = find_alloc(base, host);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	legacy(a->ctx);
	for (struct fake_alloc **p = &allocs; *p; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	free(a->base);
	free(a);
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) { LOCKED(release((const void *)(uintptr_t)ptr, 0)); }

CUresult cuMemFreeHost(void *ptr) { LOCKED(release(ptr, 1)); }

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, int async)
{
	TRY(in());
	if (async && s)
		TRY(stream_of_current(s));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(dst, n));
	if (!src)
		return CUDA_ERROR_INVALID_VALUE;
	return copy((void *)(uintptr_t)dst, src, n, async ? s : NULL);
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, int async)
{
	TRY(in());
	if (async && s)
		TRY(stream_of_current(s));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(src, n));
	if (!dst)
		return CUDA_ERROR_INVALID_VALUE;
	return copy(dst, (const void *)(uintptr_t)src, n, async ? s : NULL);
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int async)
{
	TRY(in());
	if (async && s)
		TRY(stream_of_current(s));
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(dst, n));
	TRY(device_range(src, n));
	return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, async ? s : NULL);
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
	TRY(in());
	if (n == 0)
		return CUDA_SUCCESS;
	TRY(device_range(dst, n));
	legacy(current);
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
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) { LOCKED(stream_synchronize(s)); }

static CUresult stream_query(CUstream s)
{
	TRY(in());
	TRY(stream_of_current(s));
	if (s->done == s->queued)
		return CUDA_SUCCESS;
	run_one(s); /* the device makes progress between queries */
	return CUDA_ERROR_NOT_READY;
}

CUresult cuStreamQuery(CUstream s) { LOCKED(stream_query(s)); }

static CUresult stream_wait_event(CUstream s, CUevent e, unsigned int flags)
{
	struct fake_op op = {.kind = OP_WAIT};

	TRY(in());
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	TRY(event_of_current(e));
	if (s)
		TRY(stream_of_current(s));
	if (event_reached(e) || e->stream == s)
		return CUDA_SUCCESS;
	if (!s) {
		run_until(e->stream, e->seq);
		return CUDA_SUCCESS;
	}
	op.target = e->stream;
	op.upto = e->seq;
	return enqueue(s, &op);
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) { LOCKED(stream_wait_event(s, e, flags)); }

/* Events. */

static CUresult event_create(CUevent *out, unsigned int flags)
{
	struct fake_event *e;

	TRY(in());
	if (!out || (flags & ~(unsigned int)EVENT_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	e = calloc(1, sizeof *e);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->ctx = current;
	e->flags = flags;
	e->live = 1;
	e->next = events;
	events = e;
	*out = e;
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) { LOCKED(event_create(e, flags)); }

static CUresult event_record(CUevent e, CUstream s)
{
	struct fake_op op = {.kind = OP_RECORD, .event = e};

	TRY(in());
	TRY(event_of_current(e));
	if (!s) {
		legacy(current);
		e->recorded = 1;
		e->stream = NULL;
		e->ms = now_ms();
		return CUDA_SUCCESS;
	}
	TRY(stream_of_current(s));
	TRY(enqueue(s, &op));
	e->recorded = 1;
	e->stream = s;
	e->seq = s->queued;
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) { LOCKED(event_record(e, s)); }

static CUresult event_synchronize(CUevent e)
{
	TRY(in());
	TRY(event_of_current(e));
	if (!event_reached(e))
		run_until(e->stream, e->seq);
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) { LOCKED(event_synchronize(e)); }

static CUresult event_query(CUevent e)
{
	TRY(in());
	TRY(event_of_current(e));
	if (event_reached(e))
		return CUDA_SUCCESS;
	run_one(e->stream);
	return CUDA_ERROR_NOT_READY;
}

CUresult cuEventQuery(CUevent e) { LOCKED(event_query(e)); }

static CUresult event_destroy(CUevent e)
{
	TRY(in());
	TRY(event_of_current(e));
	e->live = 0;
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

static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		       unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
		       void **extra)
{
	struct fake_op op = {.kind = OP_KERNEL};
	struct fake_launch *l = &op.launch;
	const struct fake_kernel *k;
	int i = 0;

	TRY(in());
	TRY(function_of_current(f));
	if (s)
		TRY(stream_of_current(s));
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
	memcpy(&l->n, params[i++], sizeof l->n);
	if (k->ssize)
		memcpy(l->scalar, params[i], k->ssize);
	if (l->n > SIZE_MAX / k->esize)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < k->nptr; i++)
		TRY(device_range(l->ptr[i], l->n * k->esize));
	if (!s) {
		legacy(current);
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
