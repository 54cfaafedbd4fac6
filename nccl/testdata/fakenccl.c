/*
 * fakenccl is a stand-in libnccl.so.2 for package nccl's tests, to run
 * with package fakecuda's libcuda.so.1, whose device memory is host
 * memory: device addresses are host addresses.
 *
 * Ranks live in processes of their own, as NCCL's do, or share one.
 * ncclGetUniqueId starts a hub in its process: a thread that listens on
 * an abstract Unix socket, whose name the unique id carries. Every
 * communicator of every rank holds a connection to its hub, and sends it
 * each call with the bytes the call reads; the hub answers with the bytes
 * the call writes. The hub runs calls on the host as they meet: a
 * collective once every rank has made it (the last to arrive computes
 * every rank's results), a send by keeping its data as a message, a
 * receive once the matching message is there (the k-th send from a to b
 * matches b's k-th receive from a). Between ncclGroupStart and
 * ncclGroupEnd calls are queued, and ncclGroupEnd sends them together:
 * the hub makes the sends, then the collectives in order, then the
 * receives. Unlike NCCL's, a group holds the calls of one communicator
 * only. The communicators ncclCommSplit makes belong to their parent's
 * hub.
 *
 * A call returns once it is queued, as NCCL's do, and runs on a thread of
 * its communicator's own, in stream order: the call records an event on
 * its stream, after which the stream waits for a word in device memory
 * to reach the call's number. The thread waits for the event (and so for
 * the work queued before the call), makes the call in the hub, writes its
 * results, and then the word, so that the work queued after the call sees
 * them; a call that fails there sets the communicator's asynchronous
 * error, and writes the word all the same. Splits run at once, on the
 * calling thread, as NCCL's block. Nothing here holds its lock while
 * calling the driver: the fake driver holds a lock of its own while
 * running a stream's work.
 *
 * It refuses what NCCL refuses, with NCCL's result codes: a rank out of
 * range (ncclInvalidArgument); two ranks of one communicator on one
 * device, known by its PCI bus id, in one process or in two (every rank
 * fails with ncclInvalidUsage, "Duplicate GPU detected"); unknown data
 * types and reductions, and roots and peers out of range
 * (ncclInvalidArgument). Where NCCL would hang or corrupt memory, it
 * fails with ncclInvalidUsage instead: ranks that disagree on the number
 * of ranks, a rank that joins twice, collectives whose kind, count, type,
 * root or reduction differ between ranks, a receive of another size than
 * its send. As NCCL does, it prints why to standard error where
 * NCCL_DEBUG is WARN, INFO or TRACE.
 *
 * A wait for peers that does not end within GOCOMMS_FAKENCCL_TIMEOUT_MS
 * (10000 by default) fails with ncclSystemError, and sets the
 * communicator's asynchronous error, where NCCL would hang. ncclCommAbort
 * on one rank fails the waits of the others with ncclRemoteError, and a
 * call whose hub is gone fails with ncclRemoteError. A hub keeps its
 * communicators until its process ends, since peers may still look for
 * them, so that process must outlive the other ranks' calls. An aborted
 * communicator is kept too: a call of another thread may still use it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef int ncclResult_t;
enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7
};

enum { NTYPES = 10, NOPS = 5, MAX_CUSTOM = 256, NOCOLOR = -1 };
enum { F_INT8, F_UINT8, F_INT32, F_UINT32, F_INT64, F_UINT64, F_HALF, F_FLOAT, F_DOUBLE, F_BF16 };
/* O_PREMUL stands, on the way to the hub, for any ncclRedOpCreatePreMulSum op. */
enum { O_SUM, O_PROD, O_MAX, O_MIN, O_AVG, O_PREMUL };
static const size_t type_size[NTYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

typedef struct {
	char internal[128];
} ncclUniqueId;

enum kind { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_SEND, K_RECV, K_SPLIT };

/* wire_call is a call as it travels to the hub. */
struct wire_call {
	int32_t kind, dtype, op, peer; /* peer: the root, for rooted collectives */
	int32_t color, key;            /* ncclCommSplit's */
	uint64_t count;
	double scalar; /* O_PREMUL's */
};

enum { REQ_INIT, REQ_RUN, REQ_ABORT };

/* A request is followed, for REQ_RUN, by ncalls wire_calls, then the bytes
 * each reads; its reply, if the calls succeeded, by the bytes each writes. */
struct request {
	int32_t type, rank, nranks, ncalls;
	uint64_t group; /* the hub's number for the communicator */
	int64_t busid;  /* REQ_INIT's: the rank's device */
};

struct reply {
	int32_t rc;
	int32_t rank, nranks; /* of the communicator made (init, split); rank -1 for none */
	uint64_t group;
	char warn[200]; /* why it failed, as NCCL's WARN says */
};

struct job;

struct ncclComm {
	char hub[100]; /* its socket's name */
	int fd, rank, nranks;
	uint64_t group;
	int64_t busid;
	pthread_mutex_t io; /* one request at a time on fd */
	ncclResult_t async; /* read and written atomically */

	/* The thread that runs the queued calls, started by the first. */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct job *head, *tail;
	int working, stopping, aborted;
	pthread_t worker;
	void *ctx;              /* the CUDA context the calls were queued in */
	unsigned long long word; /* device memory: the number of the last call run */
	uint64_t issued;         /* calls queued */
};
typedef struct ncclComm *ncclComm_t;

/* pending is a call made on this side, queued or on its way. */
struct pending {
	ncclComm_t comm;
	void *stream;
	const void *send;
	void *recv;
	int op; /* ncclRedOp_t */
	struct wire_call w;
	ncclComm_t *newcomm;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct {
	int used;
	double scalar;
} custom[MAX_CUSTOM];
static uint64_t ids;

static __thread int depth;
static __thread struct pending *queued;
static __thread int nqueued, capqueued;

static long timeout_ms(void)
{
	const char *s = getenv("GOCOMMS_FAKENCCL_TIMEOUT_MS");
	long v = s ? atol(s) : 0;
	return v > 0 ? v : 10000;
}

static struct timespec deadline(void)
{
	struct timespec ts;
	long ms = timeout_ms();
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* warn prints why a call fails, where NCCL_DEBUG asks for NCCL's warnings. */
static void warn(const char *why)
{
	const char *level = getenv("NCCL_DEBUG");
	if (why[0] && level &&
	    (!strcasecmp(level, "WARN") || !strcasecmp(level, "INFO") || !strcasecmp(level, "TRACE")))
		fprintf(stderr, "fakenccl:%d NCCL WARN %s\n", (int)getpid(), why);
}

/* The driver's entry points, found once. */
static struct {
	int found;
	int (*ctx_get_device)(int *);
	int (*pci_bus_id)(char *, int, int);
	int (*ctx_get_current)(void **);
	int (*ctx_set_current)(void *);
	int (*event_create)(void **, unsigned int);
	int (*event_record)(void *, void *);
	int (*event_sync)(void *);
	int (*event_destroy)(void *);
	int (*wait_value64)(void *, unsigned long long, uint64_t, unsigned int);
	int (*mem_alloc)(unsigned long long *, size_t);
	int (*mem_free)(unsigned long long);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

enum { CU_EVENT_DISABLE_TIMING = 2, CU_STREAM_WAIT_VALUE_GEQ = 0 };

static void find_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return;
	*(void **)(&drv.ctx_get_device) = dlsym(h, "cuCtxGetDevice");
	*(void **)(&drv.pci_bus_id) = dlsym(h, "cuDeviceGetPCIBusId");
	*(void **)(&drv.ctx_get_current) = dlsym(h, "cuCtxGetCurrent");
	*(void **)(&drv.ctx_set_current) = dlsym(h, "cuCtxSetCurrent");
	*(void **)(&drv.event_create) = dlsym(h, "cuEventCreate");
	*(void **)(&drv.event_record) = dlsym(h, "cuEventRecord");
	*(void **)(&drv.event_sync) = dlsym(h, "cuEventSynchronize");
	*(void **)(&drv.event_destroy) = dlsym(h, "cuEventDestroy_v2");
	*(void **)(&drv.wait_value64) = dlsym(h, "cuStreamWaitValue64_v2");
	*(void **)(&drv.mem_alloc) = dlsym(h, "cuMemAlloc_v2");
	*(void **)(&drv.mem_free) = dlsym(h, "cuMemFree_v2");
	drv.found = drv.ctx_get_current && drv.ctx_set_current && drv.event_create && drv.event_record &&
		    drv.event_sync && drv.event_destroy && drv.wait_value64 && drv.mem_alloc && drv.mem_free;
}

/* current_busid finds the bus id of the current context's device, as a
 * number the way NCCL makes one: "0000:41:00.0" is 0x41000. */
static ncclResult_t current_busid(int64_t *out)
{
	char s[32];
	int dev;
	int64_t id = 0;

	pthread_once(&drv_once, find_driver);
	if (!drv.ctx_get_device || !drv.pci_bus_id || drv.ctx_get_device(&dev) != 0 ||
	    drv.pci_bus_id(s, sizeof s, dev) != 0)
		return ncclUnhandledCudaError;
	for (const char *p = s; *p; p++) {
		int v;
		if (*p == '.' || *p == ':')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			break;
		id = id << 4 | v;
	}
	*out = id;
	return ncclSuccess;
}

/* Sockets. */

static int full(int fd, void *buf, size_t n, int writing)
{
	char *p = buf;
	while (n > 0) {
		ssize_t k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int get(int fd, void *buf, size_t n) { return full(fd, buf, n, 0); }
static int put(int fd, const void *buf, size_t n) { return full(fd, (void *)buf, n, 1); }

static socklen_t address(struct sockaddr_un *a, const char *name)
{
	size_t n = strnlen(name, sizeof a->sun_path - 2);
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, n); /* sun_path[0] == 0: abstract, nothing to remove */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int dial(const char *name)
{
	struct sockaddr_un a;
	socklen_t len = address(&a, name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* send_bytes and recv_bytes are how many bytes call w of rank of n ranks
 * reads and writes. */
static size_t send_bytes(const struct wire_call *w, int rank, int n)
{
	size_t b = w->kind == K_SPLIT ? 0 : w->count * type_size[w->dtype];
	switch (w->kind) {
	case K_BROADCAST:
		return rank == w->peer ? b : 0;
	case K_REDUCE_SCATTER:
		return b * (size_t)n;
	case K_RECV:
	case K_SPLIT:
		return 0;
	default:
		return b;
	}
}

static size_t recv_bytes(const struct wire_call *w, int rank, int n)
{
	size_t b = w->kind == K_SPLIT ? 0 : w->count * type_size[w->dtype];
	switch (w->kind) {
	case K_REDUCE:
		return rank == w->peer ? b : 0;
	case K_ALL_GATHER:
		return b * (size_t)n;
	case K_SEND:
	case K_SPLIT:
		return 0;
	default:
		return b;
	}
}

/* Values: integers as 64 bits, floats as double. */

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;

	if (exp == 0 && man == 0) {
		bits = sign;
	} else if (exp == 0) { /* subnormal */
		exp = 113;
		while (!(man & 0x400)) {
			man <<= 1;
			exp--;
		}
		bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
	} else if (exp == 31) {
		bits = sign | 0x7f800000 | (man << 13);
	} else {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	}
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t bits, sign, man;
	int exp;

	memcpy(&bits, &f, 4);
	sign = (bits >> 16) & 0x8000;
	exp = (int)((bits >> 23) & 0xff) - 127 + 15;
	man = bits & 0x7fffff;
	if (((bits >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		uint32_t shift, m, half, rest;
		if (exp < -10)
			return (uint16_t)sign;
		m = man | 0x800000;
		shift = (uint32_t)(14 - exp);
		half = 1u << (shift - 1);
		rest = m & ((1u << shift) - 1);
		m >>= shift;
		if (rest > half || (rest == half && (m & 1)))
			m++;
		return (uint16_t)(sign | m);
	}
	{
		uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;
		if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
			h++; /* may carry into the exponent, as rounding should */
		return (uint16_t)h;
	}
}

static float bf16_to_float(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, 4);
	if ((bits & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((bits >> 16) | 0x40);
	return (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

static int is_float(int dt) { return dt == F_HALF || dt == F_FLOAT || dt == F_DOUBLE || dt == F_BF16; }
static int is_signed(int dt) { return dt == F_INT8 || dt == F_INT32 || dt == F_INT64; }

static double get_f(const void *p, size_t i, int dt)
{
	switch (dt) {
	case F_HALF:
		return half_to_float(((const uint16_t *)p)[i]);
	case F_BF16:
		return bf16_to_float(((const uint16_t *)p)[i]);
	case F_FLOAT:
		return ((const float *)p)[i];
	default:
		return ((const double *)p)[i];
	}
}

static void put_f(void *p, size_t i, int dt, double v)
{
	switch (dt) {
	case F_HALF:
		((uint16_t *)p)[i] = float_to_half((float)v);
		break;
	case F_BF16:
		((uint16_t *)p)[i] = float_to_bf16((float)v);
		break;
	case F_FLOAT:
		((float *)p)[i] = (float)v;
		break;
	default:
		((double *)p)[i] = v;
	}
}

static uint64_t get_i(const void *p, size_t i, int dt)
{
	switch (dt) {
	case F_INT8:
		return (uint64_t)(int64_t)((const int8_t *)p)[i];
	case F_UINT8:
		return ((const uint8_t *)p)[i];
	case F_INT32:
		return (uint64_t)(int64_t)((const int32_t *)p)[i];
	case F_UINT32:
		return ((const uint32_t *)p)[i];
	default:
		return ((const uint64_t *)p)[i];
	}
}

static void put_i(void *p, size_t i, int dt, uint64_t v)
{
	switch (dt) {
	case F_INT8:
	case F_UINT8:
		((uint8_t *)p)[i] = (uint8_t)v;
		break;
	case F_INT32:
	case F_UINT32:
		((uint32_t *)p)[i] = (uint32_t)v;
		break;
	default:
		((uint64_t *)p)[i] = v;
	}
}

/*
 * reduce_into sets count elements of dst to the reduction of the n
 * blocks src[r] + off elements, with op (O_PREMUL: a sum of each src[r]
 * times scale[r]).
 */
static void reduce_into(void *dst, const void *const *src, const double *scale, int n, size_t off, size_t count,
			int dt, int op)
{
	int kind = op;

	if (op == O_PREMUL)
		kind = O_SUM;
	for (size_t i = off; i < off + count; i++) {
		if (is_float(dt)) {
			double acc = get_f(src[0], i, dt) * scale[0];
			for (int r = 1; r < n; r++) {
				double v = get_f(src[r], i, dt) * scale[r];
				switch (kind) {
				case O_PROD:
					acc *= v;
					break;
				case O_MAX:
					acc = v > acc ? v : acc;
					break;
				case O_MIN:
					acc = v < acc ? v : acc;
					break;
				default:
					acc += v;
				}
			}
			if (kind == O_AVG)
				acc /= n;
			put_f(dst, i - off, dt, acc);
			continue;
		}
		uint64_t acc = get_i(src[0], i, dt);
		for (int r = 1; r < n; r++) {
			uint64_t v = get_i(src[r], i, dt);
			int less = is_signed(dt) ? (int64_t)v < (int64_t)acc : v < acc;
			switch (kind) {
			case O_PROD:
				acc *= v;
				break;
			case O_MAX:
				acc = less ? acc : v;
				break;
			case O_MIN:
				acc = less ? v : acc;
				break;
			default:
				acc += v;
			}
		}
		if (kind == O_AVG)
			acc = is_signed(dt) ? (uint64_t)((int64_t)acc / n) : acc / (uint64_t)n;
		put_i(dst, i - off, dt, acc);
	}
}


/* The hub. */

struct member {
	uint64_t collectives; /* begun: numbers their slots */
	int64_t busid;
	int joined;
};

/* made is what a split makes for one rank. */
struct made {
	uint64_t group;
	int rank, nranks;
};

/* call is a call in the hub; send and recv are the hub's copies. */
struct call {
	enum kind kind;
	struct group *g;
	int rank;
	const void *send;
	void *recv;
	size_t count;
	int dtype, op, peer, color, key;
	double scalar;
	struct made *made;
};

/* slot gathers the ranks' calls of one collective. */
struct slot {
	uint64_t seq;
	int arrived, left, done, broken;
	ncclResult_t result;
	struct call *calls; /* by rank */
	struct slot *next;
};

struct msg {
	int src, dst;
	size_t bytes;
	void *data;
	struct msg *next;
};

struct group {
	uint64_t id;
	int nranks, joined, ready, aborted;
	struct member *members; /* by rank */
	struct slot *slots;
	struct msg *mail;   /* in the order sent */
	struct group *next; /* in groups */
};

static struct group *groups; /* of every hub of this process */

struct hub {
	int fd;
	struct group *root; /* the unique id's communicator, once a rank joins */
};

struct conn {
	struct hub *h;
	int fd;
};

/* new_group makes a group of n ranks, mu held. */
static struct group *new_group(int n)
{
	struct group *g = calloc(1, sizeof *g);
	g->id = ++ids;
	g->nranks = n;
	g->members = calloc((size_t)n, sizeof *g->members);
	g->next = groups;
	groups = g;
	return g;
}

static struct group *find_group(uint64_t id)
{
	struct group *g;
	pthread_mutex_lock(&mu);
	for (g = groups; g && g->id != id; g = g->next)
		;
	pthread_mutex_unlock(&mu);
	return g;
}

/* compute runs slot's collective for every rank, mu held. */
static ncclResult_t compute(struct group *g, struct slot *s)
{
	struct call *c = s->calls, *c0 = &s->calls[0];
	int n = g->nranks;
	const void **src = calloc((size_t)n, sizeof *src);
	double *scale = calloc((size_t)n, sizeof *scale);
	size_t es = c0->kind == K_SPLIT ? 0 : type_size[c0->dtype], bytes = c0->count * es;
	char *tmp = NULL;
	ncclResult_t rc = ncclSuccess;

	if (!src || !scale) {
		rc = ncclSystemError;
		goto out;
	}
	for (int r = 0; r < n; r++) {
		if (c[r].kind != c0->kind || (c0->kind != K_SPLIT && (c[r].count != c0->count ||
		    c[r].dtype != c0->dtype || c[r].peer != c0->peer || c[r].op != c0->op))) {
			rc = ncclInvalidUsage;
			goto out;
		}
		src[r] = c[r].send;
		scale[r] = c[r].scalar;
	}
	switch (c0->kind) {
	case K_ALL_REDUCE:
	case K_REDUCE:
		tmp = malloc(bytes + 1);
		reduce_into(tmp, src, scale, n, 0, c0->count, c0->dtype, c0->op);
		for (int r = 0; r < n; r++)
			if (c0->kind == K_ALL_REDUCE || r == c0->peer)
				memcpy(c[r].recv, tmp, bytes);
		break;
	case K_BROADCAST:
		for (int r = 0; r < n; r++)
			memcpy(c[r].recv, c[c0->peer].send, bytes);
		break;
	case K_ALL_GATHER:
		for (int r = 0; r < n; r++)
			for (int q = 0; q < n; q++)
				memcpy((char *)c[r].recv + (size_t)q * bytes, c[q].send, bytes);
		break;
	case K_REDUCE_SCATTER:
		for (int r = 0; r < n; r++)
			reduce_into(c[r].recv, src, scale, n, (size_t)r * c0->count, c0->count, c0->dtype, c0->op);
		break;
	case K_SPLIT:
		for (int r = 0; r < n; r++) {
			struct group *ng;
			int members = 0;

			if (c[r].color == NOCOLOR || c[r].made->group)
				continue;
			for (int q = 0; q < n; q++)
				members += c[q].color == c[r].color;
			ng = new_group(members);
			ng->joined = members;
			ng->ready = 1;
			/* new ranks by key, then by parent rank */
			for (int q = 0; q < n; q++) {
				int rank = 0;
				if (c[q].color != c[r].color)
					continue;
				for (int p = 0; p < n; p++)
					if (c[p].color == c[q].color &&
					    (c[p].key < c[q].key || (c[p].key == c[q].key && p < q)))
						rank++;
				*c[q].made = (struct made){.group = ng->id, .rank = rank, .nranks = members};
				ng->members[rank] = g->members[q];
				ng->members[rank].collectives = 0;
			}
		}
		break;
	default:
		rc = ncclInvalidUsage;
	}
out:
	free(tmp);
	free(scale);
	free(src);
	return rc;
}

/* wait waits for cv until *until, mu held; nonzero once that passed. */
static int wait(const struct timespec *until) { return pthread_cond_timedwait(&cv, &mu, until) == ETIMEDOUT; }

/* collective makes c, mu held: joins its slot, and waits for the others. */
static ncclResult_t collective(struct call *c)
{
	struct group *g = c->g;
	uint64_t seq = g->members[c->rank].collectives++;
	struct slot *s, **link;
	struct timespec until = deadline();
	ncclResult_t rc;

	if (g->aborted)
		return ncclRemoteError;
	for (s = g->slots; s && s->seq != seq; s = s->next)
		;
	if (!s) {
		s = calloc(1, sizeof *s);
		s->seq = seq;
		s->calls = calloc((size_t)g->nranks, sizeof *s->calls);
		s->next = g->slots;
		g->slots = s;
	}
	if (s->broken)
		return ncclRemoteError;
	s->calls[c->rank] = *c;
	if (++s->arrived == g->nranks) {
		s->result = compute(g, s);
		s->done = 1;
		pthread_cond_broadcast(&cv);
	}
	while (!s->done && !s->broken && !g->aborted) {
		if (wait(&until)) {
			s->broken = 1;
			pthread_cond_broadcast(&cv);
			return ncclSystemError;
		}
	}
	if (!s->done)
		return ncclRemoteError;
	rc = s->result;
	if (++s->left == g->nranks) {
		for (link = &g->slots; *link != s; link = &(*link)->next)
			;
		*link = s->next;
		free(s->calls);
		free(s);
	}
	return rc;
}

static ncclResult_t post(const struct call *c)
{
	struct msg *m = calloc(1, sizeof *m), **tail;
	struct group *g = c->g;

	if (!m)
		return ncclSystemError;
	m->src = c->rank;
	m->dst = c->peer;
	m->bytes = c->count * type_size[c->dtype];
	m->data = malloc(m->bytes + 1);
	memcpy(m->data, c->send, m->bytes);
	for (tail = &g->mail; *tail; tail = &(*tail)->next)
		;
	*tail = m;
	pthread_cond_broadcast(&cv);
	return ncclSuccess;
}

static ncclResult_t receive(const struct call *c)
{
	struct group *g = c->g;
	struct timespec until = deadline();
	size_t bytes = c->count * type_size[c->dtype];

	for (;;) {
		struct msg **link;
		if (g->aborted)
			return ncclRemoteError;
		for (link = &g->mail; *link; link = &(*link)->next) {
			struct msg *m = *link;
			if (m->src != c->peer || m->dst != c->rank)
				continue;
			*link = m->next;
			if (m->bytes != bytes) {
				free(m->data);
				free(m);
				return ncclInvalidUsage;
			}
			memcpy(c->recv, m->data, bytes);
			free(m->data);
			free(m);
			return ncclSuccess;
		}
		if (wait(&until))
			return ncclSystemError;
	}
}

/* hub_run makes one rank's n calls: sends, then collectives, then receives. */
static ncclResult_t hub_run(struct call *calls, int n)
{
	ncclResult_t rc = ncclSuccess;

	pthread_mutex_lock(&mu);
	for (int i = 0; i < n && rc == ncclSuccess; i++)
		if (calls[i].kind == K_SEND)
			rc = post(&calls[i]);
	for (int i = 0; i < n && rc == ncclSuccess; i++)
		if (calls[i].kind != K_SEND && calls[i].kind != K_RECV)
			rc = collective(&calls[i]);
	for (int i = 0; i < n && rc == ncclSuccess; i++)
		if (calls[i].kind == K_RECV)
			rc = receive(&calls[i]);
	pthread_mutex_unlock(&mu);
	return rc;
}

/* hub_init joins a rank to h's communicator once all have joined, and
 * checks, as NCCL does then, that no two share a device. */
static ncclResult_t hub_init(struct hub *h, const struct request *q, struct reply *out)
{
	struct timespec until = deadline();
	struct group *g;
	ncclResult_t rc = ncclSuccess;

	pthread_mutex_lock(&mu);
	if (!h->root)
		h->root = new_group(q->nranks);
	g = h->root;
	if (g->nranks != q->nranks) {
		snprintf(out->warn, sizeof out->warn, "rank %d joins a communicator of %d ranks, not %d", q->rank,
			 g->nranks, q->nranks);
		rc = ncclInvalidUsage;
		goto out;
	}
	if (q->rank < 0 || q->rank >= g->nranks) {
		snprintf(out->warn, sizeof out->warn, "Invalid rank requested : %d/%d", q->rank, g->nranks);
		rc = ncclInvalidArgument;
		goto out;
	}
	if (g->members[q->rank].joined) {
		snprintf(out->warn, sizeof out->warn, "rank %d of %d ranks has already checked in", q->rank,
			 g->nranks);
		rc = ncclInvalidUsage;
		goto out;
	}
	g->members[q->rank].joined = 1;
	g->members[q->rank].busid = q->busid;
	if (++g->joined == g->nranks) {
		g->ready = 1;
		pthread_cond_broadcast(&cv);
	}
	while (!g->ready) {
		if (wait(&until)) {
			g->joined--;
			g->members[q->rank].joined = 0;
			rc = ncclSystemError;
			goto out;
		}
	}
	for (int i = 0; i < g->nranks; i++) {
		if (i != q->rank && g->members[i].busid == q->busid) {
			snprintf(out->warn, sizeof out->warn,
				 "Duplicate GPU detected : rank %d and rank %d both on CUDA device %llx", q->rank, i,
				 (unsigned long long)q->busid);
			rc = ncclInvalidUsage;
			goto out;
		}
	}
	out->group = g->id;
	out->rank = q->rank;
	out->nranks = g->nranks;
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

/* serve_run reads the calls of q, makes them, and answers; nonzero if
 * the connection failed. */
static int serve_run(int fd, const struct request *q)
{
	struct group *g = find_group(q->group);
	size_t n = (size_t)q->ncalls + 1;
	struct wire_call *w = calloc(n, sizeof *w);
	struct call *calls = calloc(n, sizeof *calls);
	struct made *made = calloc(n, sizeof *made);
	struct reply r = {.rank = -1};
	int failed = !g || !w || !calls || !made || q->rank < 0 || q->rank >= g->nranks;

	for (int i = 0; i < q->ncalls && !failed; i++) {
		failed = get(fd, &w[i], sizeof w[i]) != 0 || (w[i].kind != K_SPLIT && (w[i].dtype < 0 || w[i].dtype >= NTYPES));
		if (failed)
			break;
		made[i].rank = -1;
		calls[i] = (struct call){.kind = w[i].kind, .g = g, .rank = q->rank, .count = w[i].count,
					 .dtype = w[i].dtype, .op = w[i].op, .peer = w[i].peer, .color = w[i].color,
					 .key = w[i].key, .scalar = w[i].scalar, .made = &made[i]};
		calls[i].send = malloc(send_bytes(&w[i], q->rank, g->nranks) + 1);
		calls[i].recv = malloc(recv_bytes(&w[i], q->rank, g->nranks) + 1);
	}
	for (int i = 0; i < q->ncalls && !failed; i++)
		failed = get(fd, (void *)calls[i].send, send_bytes(&w[i], q->rank, g->nranks)) != 0;
	if (!failed) {
		r.rc = hub_run(calls, q->ncalls);
		for (int i = 0; i < q->ncalls && r.rc == ncclSuccess; i++) {
			if (calls[i].kind == K_SPLIT) {
				r.group = made[i].group;
				r.rank = made[i].rank;
				r.nranks = made[i].nranks;
			}
		}
		failed = put(fd, &r, sizeof r) != 0;
	}
	for (int i = 0; i < q->ncalls && !failed && r.rc == ncclSuccess; i++)
		failed = put(fd, calls[i].recv, recv_bytes(&w[i], q->rank, g->nranks)) != 0;
	for (int i = 0; calls && i < q->ncalls; i++) {
		free((void *)calls[i].send);
		free(calls[i].recv);
	}
	free(w);
	free(calls);
	free(made);
	return failed;
}

/* serve answers one connection's requests until it closes. */
static void *serve(void *arg)
{
	struct conn *c = arg;
	struct request q;

	while (get(c->fd, &q, sizeof q) == 0) {
		struct reply r = {.rank = -1};
		if (q.type == REQ_RUN) {
			if (serve_run(c->fd, &q) != 0)
				break;
			continue;
		}
		if (q.type == REQ_INIT) {
			r.rc = hub_init(c->h, &q, &r);
		} else {
			struct group *g = find_group(q.group);
			pthread_mutex_lock(&mu);
			if (g)
				g->aborted = 1;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
		}
		if (put(c->fd, &r, sizeof r) != 0)
			break;
	}
	close(c->fd);
	free(c);
	return NULL;
}

static void *listen_loop(void *arg)
{
	struct hub *h = arg;

	for (;;) {
		pthread_t t;
		struct conn *c;
		int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		c = calloc(1, sizeof *c);
		c->h = h;
		c->fd = fd;
		if (pthread_create(&t, NULL, serve, c) != 0) {
			close(fd);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
}

/* The ranks' side. */

/* prepare checks a call, and puts its reduction on the wire. */
static ncclResult_t prepare(struct pending *p)
{
	struct wire_call *w = &p->w;

	if (!p->comm)
		return ncclInvalidArgument;
	if (w->kind == K_SPLIT)
		return ncclSuccess;
	if (w->dtype < 0 || w->dtype >= NTYPES || w->peer < -1 || w->peer >= p->comm->nranks)
		return ncclInvalidArgument;
	w->op = p->op;
	w->scalar = 1;
	if (p->op < 0 || p->op >= NOPS + MAX_CUSTOM)
		return ncclInvalidArgument;
	if (p->op >= NOPS) {
		pthread_mutex_lock(&mu);
		w->op = custom[p->op - NOPS].used ? O_PREMUL : -1;
		w->scalar = custom[p->op - NOPS].scalar;
		pthread_mutex_unlock(&mu);
		if (w->op < 0)
			return ncclInvalidArgument;
	}
	return ncclSuccess;
}

static ncclComm_t new_comm(const char *hub, const struct reply *r, int64_t busid)
{
	ncclComm_t c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	snprintf(c->hub, sizeof c->hub, "%s", hub);
	c->fd = dial(hub);
	c->rank = r->rank;
	c->nranks = r->nranks;
	c->group = r->group;
	c->busid = busid;
	pthread_mutex_init(&c->io, NULL);
	pthread_mutex_init(&c->qmu, NULL);
	pthread_cond_init(&c->qcv, NULL);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

/* exchange sends q and the calls' bytes on comm's connection, and reads
 * the reply and the bytes they write. */
static ncclResult_t exchange(ncclComm_t comm, const struct request *q, struct pending *p, struct reply *r)
{
	int failed;

	pthread_mutex_lock(&comm->io);
	failed = put(comm->fd, q, sizeof *q) != 0;
	for (int i = 0; i < q->ncalls && !failed; i++)
		failed = put(comm->fd, &p[i].w, sizeof p[i].w) != 0;
	for (int i = 0; i < q->ncalls && !failed; i++)
		failed = put(comm->fd, p[i].send, send_bytes(&p[i].w, comm->rank, comm->nranks)) != 0;
	failed = failed || get(comm->fd, r, sizeof *r) != 0;
	for (int i = 0; i < q->ncalls && !failed && r->rc == ncclSuccess; i++)
		failed = get(comm->fd, p[i].recv, recv_bytes(&p[i].w, comm->rank, comm->nranks)) != 0;
	pthread_mutex_unlock(&comm->io);
	return failed ? ncclRemoteError : r->rc;
}

/* call_hub makes n calls of one communicator in the hub, and writes what
 * they return: results, and the communicators a split made. */
static ncclResult_t call_hub(ncclComm_t comm, struct pending *p, int n)
{
	struct request q = {.type = REQ_RUN, .ncalls = n, .rank = comm->rank, .nranks = comm->nranks,
			    .group = comm->group};
	struct reply r = {.rank = -1};
	ncclResult_t rc = exchange(comm, &q, p, &r);

	warn(r.warn);
	for (int i = 0; i < n && rc == ncclSuccess; i++) {
		if (p[i].w.kind == K_SPLIT && r.rank >= 0) {
			*p[i].newcomm = new_comm(comm->hub, &r, comm->busid);
			if (!*p[i].newcomm)
				rc = ncclSystemError;
		}
	}
	return rc;
}

/* A job is calls queued together (a group's, or one), for the worker. */
struct job {
	struct pending *calls;
	void **events; /* recorded on each call's stream as it was queued */
	int n;
	ncclResult_t failed; /* set where queuing failed after the stream waits */
	uint64_t number;
	struct job *next;
};

static void free_job(struct job *j)
{
	free(j->calls);
	free(j->events);
	free(j);
}

static void set_async(ncclComm_t comm, ncclResult_t rc)
{
	ncclResult_t none = ncclSuccess;
	__atomic_compare_exchange_n(&comm->async, &none, rc, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* work runs comm's jobs in order: once each call's stream has reached it,
 * in the hub; then it raises the word its streams wait for. Once the
 * communicator is aborted, or destroyed, it runs what is queued and ends. */
static void *work(void *arg)
{
	ncclComm_t comm = arg;

	drv.ctx_set_current(comm->ctx);
	for (;;) {
		struct job *j;
		ncclResult_t rc;

		pthread_mutex_lock(&comm->qmu);
		while (!comm->head && !comm->stopping && !comm->aborted)
			pthread_cond_wait(&comm->qcv, &comm->qmu);
		j = comm->head;
		if (j && !(comm->head = j->next))
			comm->tail = NULL;
		pthread_mutex_unlock(&comm->qmu);
		if (!j)
			return NULL;
		rc = j->failed;
		for (int i = 0; i < j->n; i++) {
			if (drv.event_sync(j->events[i]) != 0 && rc == ncclSuccess)
				rc = ncclUnhandledCudaError;
			drv.event_destroy(j->events[i]);
		}
		if (rc == ncclSuccess)
			rc = call_hub(comm, j->calls, j->n);
		if (rc != ncclSuccess)
			set_async(comm, rc);
		__atomic_store_n((uint64_t *)(uintptr_t)comm->word, j->number, __ATOMIC_SEQ_CST);
		free_job(j);
	}
}

/* start_work makes the word and the worker, once, in the calling thread's
 * context; comm->qmu held. */
static ncclResult_t start_work(ncclComm_t comm)
{
	if (comm->working)
		return ncclSuccess;
	pthread_once(&drv_once, find_driver);
	if (!drv.found || drv.ctx_get_current(&comm->ctx) != 0 || !comm->ctx ||
	    drv.mem_alloc(&comm->word, sizeof(uint64_t)) != 0)
		return ncclUnhandledCudaError;
	*(uint64_t *)(uintptr_t)comm->word = 0; /* the fake driver's device memory is the host's */
	if (pthread_create(&comm->worker, NULL, work, comm) != 0) {
		drv.mem_free(comm->word);
		return ncclSystemError;
	}
	comm->working = 1;
	return ncclSuccess;
}

/* enqueue queues n calls of comm for its worker: an event on each call's
 * stream, and on each a wait for the word to reach the job's number. */
static ncclResult_t enqueue(ncclComm_t comm, struct pending *p, int n)
{
	struct job *j = calloc(1, sizeof *j);
	ncclResult_t rc;
	int made = 0; /* events created, to destroy if queuing fails */

	if (!j || !(j->calls = malloc((size_t)n * sizeof *p)) || !(j->events = calloc((size_t)n, sizeof(void *)))) {
		if (j)
			free_job(j);
		return ncclSystemError;
	}
	memcpy(j->calls, p, (size_t)n * sizeof *p);
	j->n = n;
	pthread_mutex_lock(&comm->qmu);
	rc = comm->aborted || comm->stopping ? ncclInvalidUsage : start_work(comm);
	for (int i = 0; rc == ncclSuccess && i < n; i++) {
		if (drv.event_create(&j->events[i], CU_EVENT_DISABLE_TIMING) != 0) {
			rc = ncclUnhandledCudaError;
			break;
		}
		made = i + 1;
		if (drv.event_record(j->events[i], p[i].stream) != 0)
			rc = ncclUnhandledCudaError;
	}
	if (rc != ncclSuccess) {
		pthread_mutex_unlock(&comm->qmu);
		for (int i = 0; i < made; i++)
			drv.event_destroy(j->events[i]);
		free_job(j);
		return rc;
	}
	j->number = ++comm->issued;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < i; k++)
			seen |= p[k].stream == p[i].stream;
		if (!seen && drv.wait_value64(p[i].stream, comm->word, j->number, CU_STREAM_WAIT_VALUE_GEQ) != 0)
			j->failed = ncclUnhandledCudaError; /* the worker still raises the word */
	}
	if (comm->tail)
		comm->tail->next = j;
	else
		comm->head = j;
	comm->tail = j;
	pthread_cond_signal(&comm->qcv);
	pthread_mutex_unlock(&comm->qmu);
	return j->failed;
}

/* stop_work ends comm's worker once it has run what is queued, and frees
 * the word: the driver's free waits for the streams first. */
static void stop_work(ncclComm_t comm, int abort)
{
	pthread_mutex_lock(&comm->qmu);
	comm->stopping = 1;
	comm->aborted |= abort;
	pthread_cond_broadcast(&comm->qcv);
	int working = comm->working;
	comm->working = 0;
	pthread_mutex_unlock(&comm->qmu);
	if (!working)
		return;
	pthread_join(comm->worker, NULL);
	drv.ctx_set_current(comm->ctx);
	drv.mem_free(comm->word);
}

/* run makes n calls of one communicator: a split at once, in the hub,
 * the others by queuing them for the communicator's worker. */
static ncclResult_t run(struct pending *p, int n)
{
	ncclComm_t comm = n > 0 ? p[0].comm : NULL;
	int split = 0;
	ncclResult_t rc;

	for (int i = 0; i < n; i++) {
		if ((rc = prepare(&p[i])) != ncclSuccess)
			return rc;
		if (p[i].comm != comm)
			return ncclInvalidUsage;
		split |= p[i].w.kind == K_SPLIT;
	}
	if (n == 0)
		return ncclSuccess;
	if (!split)
		return enqueue(comm, p, n);
	if (n > 1)
		return ncclInvalidUsage; /* NCCL takes no split in a group */
	rc = call_hub(comm, p, n);
	if (rc == ncclSystemError)
		set_async(comm, rc);
	return rc;
}

static ncclResult_t submit(struct pending p)
{
	if (depth == 0)
		return run(&p, 1);
	if (nqueued == capqueued) {
		int cap = capqueued ? 2 * capqueued : 16;
		struct pending *q = realloc(queued, (size_t)cap * sizeof *q);
		if (!q)
			return ncclSystemError;
		queued = q;
		capqueued = cap;
	}
	queued[nqueued++] = p;
	return ncclSuccess;
}

/* The API. */

ncclResult_t ncclGetVersion(int *version)
{
	*version = 22105;
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
	static const char *text[] = {"no error",
				     "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
				     "unhandled system error (run with NCCL_DEBUG=INFO for details)",
				     "internal error - please report this issue to the NCCL developers",
				     "invalid argument (run with NCCL_DEBUG=WARN for details)",
				     "invalid usage (run with NCCL_DEBUG=WARN for details)",
				     "remote process exited or there was a network error",
				     "NCCL operation in progress"};
	return r >= 0 && r <= ncclInProgress ? text[r] : "unknown result code";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	struct hub *h;
	struct sockaddr_un a;
	socklen_t len;
	pthread_t t;
	uint64_t n;

	if (!id)
		return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	n = ++ids;
	pthread_mutex_unlock(&mu);
	memset(id, 0, sizeof *id);
	snprintf(id->internal, sizeof id->internal, "fakenccl-%d-%llu", (int)getpid(), (unsigned long long)n);
	h = calloc(1, sizeof *h);
	if (!h)
		return ncclSystemError;
	len = address(&a, id->internal);
	h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || bind(h->fd, (struct sockaddr *)&a, len) != 0 || listen(h->fd, 64) != 0 ||
	    pthread_create(&t, NULL, listen_loop, h) != 0) {
		if (h->fd >= 0)
			close(h->fd);
		free(h);
		return ncclSystemError;
	}
	pthread_detach(t);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	char hub[100];
	struct request q = {.type = REQ_INIT, .rank = rank, .nranks = nranks};
	struct reply r = {.rank = -1};
	ncclResult_t rc;
	int fd;

	if (!comm || nranks < 1)
		return ncclInvalidArgument;
	if (rank < 0 || rank >= nranks) {
		snprintf(r.warn, sizeof r.warn, "Invalid rank requested : %d/%d", rank, nranks);
		warn(r.warn);
		return ncclInvalidArgument;
	}
	if ((rc = current_busid(&q.busid)) != ncclSuccess)
		return rc;
	snprintf(hub, sizeof hub, "%.*s", (int)strnlen(id.internal, sizeof hub - 1), id.internal);
	fd = dial(hub);
	if (fd < 0)
		return ncclSystemError;
	if (put(fd, &q, sizeof q) != 0 || get(fd, &r, sizeof r) != 0)
		r.rc = ncclRemoteError;
	close(fd); /* the communicator's own connection is made below */
	warn(r.warn);
	if (r.rc != ncclSuccess)
		return r.rc;
	*comm = new_comm(hub, &r, q.busid);
	return *comm ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config)
{
	struct pending p = {.comm = comm, .w = {.kind = K_SPLIT, .color = color, .key = key}, .newcomm = newcomm};
	(void)config;
	if (!newcomm || (color < 0 && color != NOCOLOR))
		return ncclInvalidArgument;
	*newcomm = NULL;
	return run(&p, 1);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	struct request q = {.type = REQ_ABORT};
	struct reply r;
	int fd;

	if (!comm)
		return ncclInvalidArgument;
	q.group = comm->group;
	fd = dial(comm->hub);
	if (fd >= 0) {
		if (put(fd, &q, sizeof q) == 0)
			get(fd, &r, sizeof r);
		close(fd);
	}
	stop_work(comm, 1); /* the hub fails what it runs from now on */
	return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	stop_work(comm, 0);
	close(comm->fd);
	pthread_mutex_destroy(&comm->io);
	pthread_mutex_destroy(&comm->qmu);
	pthread_cond_destroy(&comm->qcv);
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
	if (!comm || !err)
		return ncclInvalidArgument;
	*err = __atomic_load_n(&comm->async, __ATOMIC_SEQ_CST);
	return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(int *op, void *scalar, int dtype, int residence, ncclComm_t comm)
{
	double v;

	if (!op || !scalar || !comm || residence != 1 || dtype < 0 || dtype >= NTYPES)
		return ncclInvalidArgument;
	v = is_float(dtype) ? get_f(scalar, 0, dtype) : (double)(int64_t)get_i(scalar, 0, dtype);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_CUSTOM; i++) {
		if (!custom[i].used) {
			custom[i].used = 1;
			custom[i].scalar = v;
			*op = NOPS + i;
			pthread_mutex_unlock(&mu);
			return ncclSuccess;
		}
	}
	pthread_mutex_unlock(&mu);
	return ncclSystemError;
}

ncclResult_t ncclRedOpDestroy(int op, ncclComm_t comm)
{
	if (!comm || op < NOPS || op - NOPS >= MAX_CUSTOM)
		return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	custom[op - NOPS].used = 0;
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t rc;

	if (depth == 0)
		return ncclInvalidUsage;
	if (--depth > 0)
		return ncclSuccess;
	rc = run(queued, nqueued);
	nqueued = 0;
	return rc;
}

#define SUBMIT(...)                                                     \
	do {                                                            \
		struct pending p_ = {__VA_ARGS__};                      \
		return submit(p_);                                      \
	} while (0)

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, ncclComm_t comm,
			   void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .send = send, .recv = recv, .op = op,
	       .w = {.kind = K_ALL_REDUCE, .count = count, .dtype = dtype, .peer = -1});
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, ncclComm_t comm,
			   void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .send = send, .recv = recv,
	       .w = {.kind = K_BROADCAST, .count = count, .dtype = dtype, .peer = root});
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, int dtype, int op, int root,
			ncclComm_t comm, void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .send = send, .recv = recv, .op = op,
	       .w = {.kind = K_REDUCE, .count = count, .dtype = dtype, .peer = root});
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, int dtype, ncclComm_t comm,
			   void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .send = send, .recv = recv,
	       .w = {.kind = K_ALL_GATHER, .count = count, .dtype = dtype, .peer = -1});
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, int dtype, int op,
			       ncclComm_t comm, void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .send = send, .recv = recv, .op = op,
	       .w = {.kind = K_REDUCE_SCATTER, .count = count, .dtype = dtype, .peer = -1});
}

ncclResult_t ncclSend(const void *send, size_t count, int dtype, int peer, ncclComm_t comm, void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .send = send, .w = {.kind = K_SEND, .count = count, .dtype = dtype, .peer = peer});
}

ncclResult_t ncclRecv(void *recv, size_t count, int dtype, int peer, ncclComm_t comm, void *stream)
{
	SUBMIT(.comm = comm, .stream = stream, .recv = recv, .w = {.kind = K_RECV, .count = count, .dtype = dtype, .peer = peer});
}
