/*
 * fakenccl is a stand-in libnccl.so.2 for package nccl's tests, to run
 * with package fakecuda's libcuda.so.1, whose device memory is host
 * memory: device addresses are host addresses.
 *
 * Every rank of a communicator lives in this process, on its own thread.
 * Ranks meet by unique id in a process-wide table, and a call runs at
 * once, on the host, inside the call: a collective once every rank has
 * made it (the last to arrive computes every rank's results), a send by
 * copying its data into a message, a receive once the matching message
 * is there (the k-th send from a to b matches b's k-th receive from a).
 * Between ncclGroupStart and ncclGroupEnd calls are queued; ncclGroupEnd
 * makes the sends, then the collectives in order, then the receives.
 *
 * Before reading or writing memory a call runs the work queued on its
 * stream so far, with the driver's cuStreamSynchronize, so that it sees
 * what was queued before it; the work queued after it then sees its
 * results. It calls the driver before taking its own lock, never while
 * holding it: the fake driver holds a lock of its own while running a
 * stream's work.
 *
 * A wait for peers that does not end within GOCOMMS_FAKENCCL_TIMEOUT_MS
 * (10000 by default) fails with ncclSystemError, and sets the
 * communicator's asynchronous error, where NCCL would hang. ncclCommAbort
 * on one rank fails the waits of the others with ncclRemoteError.
 * Communicators are kept until the process ends, once made, since peers
 * may still look for them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
enum { O_SUM, O_PROD, O_MAX, O_MIN, O_AVG };
static const size_t type_size[NTYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

typedef struct {
	char internal[128];
} ncclUniqueId;

enum kind { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_SEND, K_RECV, K_SPLIT };

struct group;

struct ncclComm {
	struct group *g;
	int rank;
	uint64_t collectives; /* begun: numbers their slots */
	ncclResult_t async;
};
typedef struct ncclComm *ncclComm_t;

struct call {
	enum kind kind;
	ncclComm_t comm;
	void *stream;
	const void *send;
	void *recv;
	size_t count;
	int dtype, op, peer; /* peer: the root, for rooted collectives */
	int color, key;      /* ncclCommSplit's */
	ncclComm_t *newcomm;
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
	char id[128];
	int nranks, joined, ready, aborted;
	struct slot *slots;
	struct msg *mail; /* in the order sent */
	struct group *next; /* in forming, while ranks join */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct group *forming;
static struct {
	int used, dtype;
	double scalar;
} custom[MAX_CUSTOM];
static uint64_t ids;

static __thread int depth;
static __thread struct call *queued;
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

/* The driver's cuStreamSynchronize, found once. */
static int (*stream_sync)(void *);
static pthread_once_t sync_once = PTHREAD_ONCE_INIT;

static void find_sync(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (h)
		*(void **)(&stream_sync) = dlsym(h, "cuStreamSynchronize");
}

static ncclResult_t sync_stream(void *s)
{
	if (!s)
		return ncclSuccess;
	pthread_once(&sync_once, find_sync);
	if (!stream_sync || stream_sync(s) != 0)
		return ncclUnhandledCudaError;
	return ncclSuccess;
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
 * blocks src[r] + off elements, with op (a custom one's scalar premultiplied).
 */
static void reduce_into(void *dst, const void *const *src, int n, size_t off, size_t count, int dt, int op)
{
	double scalar = 1;
	int kind = op;

	if (op >= NOPS) {
		scalar = custom[op - NOPS].scalar;
		kind = O_SUM;
	}
	for (size_t i = off; i < off + count; i++) {
		if (is_float(dt)) {
			double acc = get_f(src[0], i, dt) * scalar;
			for (int r = 1; r < n; r++) {
				double v = get_f(src[r], i, dt) * scalar;
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

/* Checks. */

static ncclResult_t check_call(const struct call *c)
{
	if (!c->comm)
		return ncclInvalidArgument;
	if (c->kind == K_SPLIT)
		return ncclSuccess;
	if (c->dtype < 0 || c->dtype >= NTYPES)
		return ncclInvalidArgument;
	if (c->op < 0 || (c->op >= NOPS && (c->op - NOPS >= MAX_CUSTOM || !custom[c->op - NOPS].used)))
		return ncclInvalidArgument;
	if (c->peer < -1 || c->peer >= c->comm->g->nranks)
		return ncclInvalidArgument;
	return ncclSuccess;
}

/* compute runs slot's collective for every rank, mu held. */
static ncclResult_t compute(struct group *g, struct slot *s)
{
	struct call *c = s->calls, *c0 = &s->calls[0];
	int n = g->nranks;
	const void **src = calloc((size_t)n, sizeof *src);
	size_t es = type_size[c0->dtype], bytes = c0->count * es;
	char *tmp = NULL;

	if (!src)
		return ncclSystemError;
	for (int r = 0; r < n; r++) {
		if (c[r].kind != c0->kind || (c0->kind != K_SPLIT && (c[r].count != c0->count ||
		    c[r].dtype != c0->dtype || c[r].peer != c0->peer || (c[r].op < NOPS) != (c0->op < NOPS) ||
		    (c0->op < NOPS && c[r].op != c0->op)))) {
			free(src);
			return ncclInvalidUsage;
		}
		src[r] = c[r].send;
	}
	switch (c0->kind) {
	case K_ALL_REDUCE:
	case K_REDUCE:
		tmp = malloc(bytes + 1);
		reduce_into(tmp, src, n, 0, c0->count, c0->dtype, c0->op);
		for (int r = 0; r < n; r++)
			if (c0->kind == K_ALL_REDUCE || r == c0->peer)
				memcpy(c[r].recv, tmp, bytes);
		break;
	case K_BROADCAST:
		tmp = malloc(bytes + 1);
		memcpy(tmp, c[c0->peer].send, bytes);
		for (int r = 0; r < n; r++)
			memcpy(c[r].recv, tmp, bytes);
		break;
	case K_ALL_GATHER:
		tmp = malloc(bytes * (size_t)n + 1);
		for (int r = 0; r < n; r++)
			memcpy(tmp + (size_t)r * bytes, c[r].send, bytes);
		for (int r = 0; r < n; r++)
			memcpy(c[r].recv, tmp, bytes * (size_t)n);
		break;
	case K_REDUCE_SCATTER:
		tmp = malloc(bytes * (size_t)n + 1);
		for (int r = 0; r < n; r++)
			reduce_into(tmp + (size_t)r * bytes, src, n, (size_t)r * c0->count, c0->count, c0->dtype, c0->op);
		for (int r = 0; r < n; r++)
			memcpy(c[r].recv, tmp + (size_t)r * bytes, bytes);
		break;
	case K_SPLIT:
		for (int r = 0; r < n; r++) {
			struct group *ng;
			int members = 0, rank = 0;

			if (c[r].color == NOCOLOR || *c[r].newcomm)
				continue;
			ng = calloc(1, sizeof *ng);
			for (int q = 0; q < n; q++)
				members += c[q].color == c[r].color;
			ng->nranks = ng->joined = members;
			ng->ready = 1;
			/* new ranks by key, then by parent rank */
			for (int q = 0; q < n; q++) {
				if (c[q].color != c[r].color)
					continue;
				rank = 0;
				for (int p = 0; p < n; p++)
					if (c[p].color == c[q].color &&
					    (c[p].key < c[q].key || (c[p].key == c[q].key && p < q)))
						rank++;
				*c[q].newcomm = calloc(1, sizeof(struct ncclComm));
				(*c[q].newcomm)->g = ng;
				(*c[q].newcomm)->rank = rank;
			}
		}
		break;
	default:
		free(src);
		return ncclInvalidUsage;
	}
	free(tmp);
	free(src);
	return ncclSuccess;
}

/* wait waits for cv until *until, mu held; nonzero once that passed. */
static int wait(const struct timespec *until) { return pthread_cond_timedwait(&cv, &mu, until) == ETIMEDOUT; }

/* collective makes c, mu held: joins its slot, and waits for the others. */
static ncclResult_t collective(struct call *c)
{
	ncclComm_t comm = c->comm;
	struct group *g = comm->g;
	uint64_t seq = comm->collectives++;
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
	s->calls[comm->rank] = *c;
	if (++s->arrived == g->nranks) {
		s->result = compute(g, s);
		s->done = 1;
		pthread_cond_broadcast(&cv);
	}
	while (!s->done && !s->broken && !g->aborted) {
		if (wait(&until)) {
			comm->async = ncclSystemError;
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
	struct group *g = c->comm->g;

	if (!m)
		return ncclSystemError;
	m->src = c->comm->rank;
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
	struct group *g = c->comm->g;
	struct timespec until = deadline();
	size_t bytes = c->count * type_size[c->dtype];

	for (;;) {
		struct msg **link;
		if (g->aborted)
			return ncclRemoteError;
		for (link = &g->mail; *link; link = &(*link)->next) {
			struct msg *m = *link;
			if (m->src != c->peer || m->dst != c->comm->rank)
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
		if (wait(&until)) {
			c->comm->async = ncclSystemError;
			return ncclSystemError;
		}
	}
}

/* run makes n calls: their streams' work first, then sends, collectives
 * and receives. */
static ncclResult_t run(struct call *calls, int n)
{
	ncclResult_t rc = ncclSuccess;

	for (int i = 0; i < n; i++) {
		if ((rc = check_call(&calls[i])) != ncclSuccess)
			return rc;
		if ((rc = sync_stream(calls[i].stream)) != ncclSuccess)
			return rc;
	}
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

static ncclResult_t submit(struct call c)
{
	if (depth == 0)
		return run(&c, 1);
	if (nqueued == capqueued) {
		int cap = capqueued ? 2 * capqueued : 16;
		struct call *q = realloc(queued, (size_t)cap * sizeof *q);
		if (!q)
			return ncclSystemError;
		queued = q;
		capqueued = cap;
	}
	queued[nqueued++] = c;
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
	static const char *text[] = {"no error", "unhandled cuda error", "unhandled system error",
				     "internal error", "invalid argument", "invalid usage",
				     "remote process exited or there was a network error", "NCCL operation in progress"};
	return r >= 0 && r <= ncclInProgress ? text[r] : "unknown result code";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(id, 0, sizeof *id);
	pthread_mutex_lock(&mu);
	snprintf(id->internal, sizeof id->internal, "fakenccl %d %llu %lld.%09ld", (int)getpid(),
		 (unsigned long long)++ids, (long long)ts.tv_sec, ts.tv_nsec);
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	struct group *g, **link;
	struct timespec until = deadline();
	ncclComm_t c;

	if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	for (g = forming; g && memcmp(g->id, id.internal, sizeof g->id) != 0; g = g->next)
		;
	if (!g) {
		g = calloc(1, sizeof *g);
		memcpy(g->id, id.internal, sizeof g->id);
		g->nranks = nranks;
		g->next = forming;
		forming = g;
	}
	if (g->nranks != nranks) {
		pthread_mutex_unlock(&mu);
		return ncclInvalidUsage;
	}
	c = calloc(1, sizeof *c);
	c->g = g;
	c->rank = rank;
	if (++g->joined == nranks) {
		g->ready = 1;
		for (link = &forming; *link != g; link = &(*link)->next)
			;
		*link = g->next;
		pthread_cond_broadcast(&cv);
	}
	while (!g->ready) {
		if (wait(&until)) {
			g->joined--;
			pthread_mutex_unlock(&mu);
			free(c);
			return ncclSystemError;
		}
	}
	pthread_mutex_unlock(&mu);
	*comm = c;
	return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config)
{
	struct call c = {.kind = K_SPLIT, .comm = comm, .color = color, .key = key, .newcomm = newcomm};
	(void)config;
	if (!newcomm || (color < 0 && color != NOCOLOR))
		return ncclInvalidArgument;
	*newcomm = NULL;
	return run(&c, 1);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	comm->g->aborted = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
	if (!comm || !err)
		return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	*err = comm->async;
	pthread_mutex_unlock(&mu);
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
			custom[i].dtype = dtype;
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
		struct call c_ = {__VA_ARGS__};                         \
		return submit(c_);                                      \
	} while (0)

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, ncclComm_t comm,
			   void *stream)
{
	SUBMIT(.kind = K_ALL_REDUCE, .comm = comm, .stream = stream, .send = send, .recv = recv,
	       .count = count, .dtype = dtype, .op = op, .peer = -1);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, ncclComm_t comm,
			   void *stream)
{
	SUBMIT(.kind = K_BROADCAST, .comm = comm, .stream = stream, .send = send, .recv = recv,
	       .count = count, .dtype = dtype, .peer = root);
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, int dtype, int op, int root,
			ncclComm_t comm, void *stream)
{
	SUBMIT(.kind = K_REDUCE, .comm = comm, .stream = stream, .send = send, .recv = recv,
	       .count = count, .dtype = dtype, .op = op, .peer = root);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, int dtype, ncclComm_t comm,
			   void *stream)
{
	SUBMIT(.kind = K_ALL_GATHER, .comm = comm, .stream = stream, .send = send, .recv = recv,
	       .count = count, .dtype = dtype, .peer = -1);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, int dtype, int op,
			       ncclComm_t comm, void *stream)
{
	SUBMIT(.kind = K_REDUCE_SCATTER, .comm = comm, .stream = stream, .send = send, .recv = recv,
	       .count = count, .dtype = dtype, .op = op, .peer = -1);
}

ncclResult_t ncclSend(const void *send, size_t count, int dtype, int peer, ncclComm_t comm, void *stream)
{
	SUBMIT(.kind = K_SEND, .comm = comm, .stream = stream, .send = send, .count = count, .dtype = dtype,
	       .peer = peer);
}

ncclResult_t ncclRecv(void *recv, size_t count, int dtype, int peer, ncclComm_t comm, void *stream)
{
	SUBMIT(.kind = K_RECV, .comm = comm, .stream = stream, .recv = recv, .count = count, .dtype = dtype,
	       .peer = peer);
}
