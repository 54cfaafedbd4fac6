/*
 * gnc.h: the part of NCCL's API this package uses, and the small C
 * functions that call it.
 *
 * The package builds without NCCL's header, so the few types and values
 * it needs are declared here, named gnc_* so that they can sit next to the
 * real ones. They follow nccl.h (2.18 on): a communicator is a pointer to
 * an opaque structure, a unique id is 128 bytes passed by value, data
 * types, reduction operators and results are ints, and a cudaStream_t is a
 * CUstream.
 *
 * Every function that calls NCCL first makes the communicator's CUDA
 * context current on the calling thread, inside the same C call: NCCL
 * finds its device through the current context, and a goroutine cannot
 * change threads within one C call. For the same reason a group
 * (ncclGroupStart to ncclGroupEnd, whose state NCCL keeps per thread) is
 * issued whole by one call, gnc_run.
 */
#ifndef GOCOMMS_NCCL_GNC_H
#define GOCOMMS_NCCL_GNC_H

#include "dlib.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
	GNC_SUCCESS = 0,
	GNC_INVALID_USAGE = 5,
	GNC_IN_PROGRESS = 7, /* ncclInProgress: a nonblocking call not done yet */
	GNC_UNIQUE_ID_BYTES = 128,
	GNC_SPLIT_NOCOLOR = -1,
	GNC_SCALAR_HOST_IMMEDIATE = 1, /* ncclScalarHostImmediate */
	GNC_CUDA_SUCCESS = 0
};

/* What gnc_run issues: one NCCL call each. call.go numbers them alike. */
enum {
	GNC_ALL_REDUCE,
	GNC_BROADCAST,
	GNC_REDUCE,
	GNC_ALL_GATHER,
	GNC_REDUCE_SCATTER,
	GNC_SEND,
	GNC_RECV
};

typedef int gnc_result;                   /* ncclResult_t */
typedef struct gnc_comm_st *gnc_comm;     /* ncclComm_t */
typedef struct {
	char internal[GNC_UNIQUE_ID_BYTES];
} gnc_unique_id;                          /* ncclUniqueId */

struct gnc_fns {
	int bound;
	gnc_result (*get_version)(int *version);
	const char *(*get_error_string)(gnc_result r);
	gnc_result (*get_unique_id)(gnc_unique_id *id);
	gnc_result (*comm_init_rank)(gnc_comm *comm, int nranks, gnc_unique_id id, int rank);
	gnc_result (*comm_split)(gnc_comm comm, int color, int key, gnc_comm *newcomm, void *config);
	gnc_result (*comm_abort)(gnc_comm comm);
	gnc_result (*comm_finalize)(gnc_comm comm);
	gnc_result (*comm_destroy)(gnc_comm comm);
	gnc_result (*comm_get_async_error)(gnc_comm comm, gnc_result *err);
	gnc_result (*all_reduce)(const void *send, void *recv, size_t count, int dtype, int op,
				 gnc_comm comm, void *stream);
	gnc_result (*broadcast)(const void *send, void *recv, size_t count, int dtype, int root,
				gnc_comm comm, void *stream);
	gnc_result (*reduce)(const void *send, void *recv, size_t count, int dtype, int op, int root,
			     gnc_comm comm, void *stream);
	gnc_result (*all_gather)(const void *send, void *recv, size_t count, int dtype, gnc_comm comm,
				 void *stream);
	gnc_result (*reduce_scatter)(const void *send, void *recv, size_t count, int dtype, int op,
				     gnc_comm comm, void *stream);
	gnc_result (*send)(const void *send, size_t count, int dtype, int peer, gnc_comm comm,
			   void *stream);
	gnc_result (*recv)(void *recv, size_t count, int dtype, int peer, gnc_comm comm, void *stream);
	gnc_result (*group_start)(void);
	gnc_result (*group_end)(void);
	gnc_result (*red_op_create_pre_mul_sum)(int *op, void *scalar, int dtype, int residence,
						gnc_comm comm);
	gnc_result (*red_op_destroy)(int op, gnc_comm comm);
	/* From the CUDA driver, which gpu/cuda has loaded. */
	int (*ctx_set_current)(void *ctx);
};

static struct gnc_fns gnc_fn;

/*
 * gnc_load opens the library called name and, the first time one opens,
 * binds gnc_fn to it. It returns 0, -1 if the library cannot be opened,
 * or -2 if it lacks an entry point; err then holds the reason. A bound
 * library is never closed: communicators made through it may live as long
 * as the process.
 */
static int gnc_load(const char *name, char *err, size_t errlen)
{
	struct gnc_fns t;
	void *h = dlib_open(name, err, errlen);

	if (!h)
		return -1;
	if (gnc_fn.bound) {
		dlclose(h); /* drops only the reference taken just now */
		return 0;
	}
	memset(&t, 0, sizeof t);
#define GNC_BIND(handle, field, sym) DLIB_BIND(handle, t.field, sym, 1, err, errlen)
	GNC_BIND(h, get_version, "ncclGetVersion");
	GNC_BIND(h, get_error_string, "ncclGetErrorString");
	GNC_BIND(h, get_unique_id, "ncclGetUniqueId");
	GNC_BIND(h, comm_init_rank, "ncclCommInitRank");
	GNC_BIND(h, comm_split, "ncclCommSplit");
	GNC_BIND(h, comm_abort, "ncclCommAbort");
	GNC_BIND(h, comm_finalize, "ncclCommFinalize");
	GNC_BIND(h, comm_destroy, "ncclCommDestroy");
	GNC_BIND(h, comm_get_async_error, "ncclCommGetAsyncError");
	GNC_BIND(h, all_reduce, "ncclAllReduce");
	GNC_BIND(h, broadcast, "ncclBroadcast");
	GNC_BIND(h, reduce, "ncclReduce");
	GNC_BIND(h, all_gather, "ncclAllGather");
	GNC_BIND(h, reduce_scatter, "ncclReduceScatter");
	GNC_BIND(h, send, "ncclSend");
	GNC_BIND(h, recv, "ncclRecv");
	GNC_BIND(h, group_start, "ncclGroupStart");
	GNC_BIND(h, group_end, "ncclGroupEnd");
	GNC_BIND(h, red_op_create_pre_mul_sum, "ncclRedOpCreatePreMulSum");
	GNC_BIND(h, red_op_destroy, "ncclRedOpDestroy");
#undef GNC_BIND
	t.bound = 1;
	gnc_fn = t;
	return 0;
}

/*
 * gnc_bind_cuda finds cuCtxSetCurrent in the CUDA driver, which gpu/cuda
 * has loaded, once NCCL is bound. It returns 0, or -3 with err holding
 * the reason.
 */
static int gnc_bind_cuda(char *err, size_t errlen)
{
	void *cu;

	if (gnc_fn.ctx_set_current)
		return 0;
	/* gpu/cuda opened libcuda with RTLD_LOCAL: find it by its own handle. */
	cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!cu) {
		dlib_copy(err, errlen, "libcuda.so.1 is not loaded");
		return -3;
	}
	*(void **)(&gnc_fn.ctx_set_current) = dlsym(cu, "cuCtxSetCurrent");
	dlclose(cu); /* gpu/cuda's reference keeps it loaded */
	if (!gnc_fn.ctx_set_current) {
		dlib_copy(err, errlen, "libcuda.so.1 lacks cuCtxSetCurrent");
		return -3;
	}
	return 0;
}

/* GNC_IN makes ctx current, failing the call with ncclUnhandledCudaError. */
#define GNC_IN(ctx)                                                     \
	do {                                                            \
		if (gnc_fn.ctx_set_current((void *)(ctx)) != GNC_CUDA_SUCCESS) \
			return 1;                                       \
	} while (0)

/* gnc_path returns the file of the bound library, or NULL. */
static const char *gnc_path(void)
{
	Dl_info info;

	if (!gnc_fn.bound || !dladdr(*(void **)&gnc_fn.get_version, &info))
		return NULL;
	return info.dli_fname;
}

static int gnc_version(void)
{
	int v = 0;
	if (gnc_fn.get_version(&v) != GNC_SUCCESS)
		return 0;
	return v;
}

static const char *gnc_error_string(gnc_result r) { return gnc_fn.get_error_string(r); }

static gnc_result gnc_get_unique_id(gnc_unique_id *id) { return gnc_fn.get_unique_id(id); }

static gnc_result gnc_init(uintptr_t ctx, gnc_comm *comm, int nranks, const gnc_unique_id *id,
			   int rank)
{
	GNC_IN(ctx);
	return gnc_fn.comm_init_rank(comm, nranks, *id, rank);
}

static gnc_result gnc_split(uintptr_t ctx, gnc_comm comm, int color, int key, gnc_comm *newcomm)
{
	GNC_IN(ctx);
	*newcomm = NULL;
	return gnc_fn.comm_split(comm, color, key, newcomm, NULL);
}

static gnc_result gnc_abort(uintptr_t ctx, gnc_comm comm)
{
	GNC_IN(ctx);
	return gnc_fn.comm_abort(comm);
}

/* gnc_close finalizes and destroys comm; *where names what failed. */
static gnc_result gnc_close(uintptr_t ctx, gnc_comm comm, const char **where)
{
	gnc_result r;

	*where = "cuCtxSetCurrent";
	GNC_IN(ctx);
	*where = "ncclCommFinalize";
	r = gnc_fn.comm_finalize(comm);
	if (r != GNC_SUCCESS) {
		gnc_fn.comm_abort(comm); /* frees it all the same */
		return r;
	}
	*where = "ncclCommDestroy";
	return gnc_fn.comm_destroy(comm);
}

static gnc_result gnc_async_error(uintptr_t ctx, gnc_comm comm, gnc_result *err)
{
	GNC_IN(ctx);
	return gnc_fn.comm_get_async_error(comm, err);
}

/* One call of gnc_run: peer is the root or the peer, where there is one. */
struct gnc_call {
	int kind;
	int peer;
	int dtype;
	uint64_t send, recv; /* device addresses */
	uint64_t count;
};

/*
 * gnc_run issues calls, in a group, on stream, with operator op, or
 * where premul a premultiplied sum by the 8 bytes at scalar, a value of
 * the calls' data type. *where names what failed.
 */
static gnc_result gnc_run(uintptr_t ctx, gnc_comm comm, uintptr_t stream, const struct gnc_call *calls,
			  int n, int op, int premul, const void *scalar, const char **where)
{
	gnc_result r, end;
	char value[8];
	void *s = (void *)stream;
	int i, red = op, pm = premul && n > 0;

	*where = "cuCtxSetCurrent";
	GNC_IN(ctx);
	if (pm) {
		memcpy(value, scalar, sizeof value);
		*where = "ncclRedOpCreatePreMulSum";
		r = gnc_fn.red_op_create_pre_mul_sum(&red, value, calls[0].dtype, GNC_SCALAR_HOST_IMMEDIATE, comm);
		if (r != GNC_SUCCESS)
			return r;
	}
	*where = "ncclGroupStart";
	r = gnc_fn.group_start();
	if (r != GNC_SUCCESS)
		goto out;
	for (i = 0; i < n && r == GNC_SUCCESS; i++) {
		const struct gnc_call *c = &calls[i];
		const void *src = (const void *)(uintptr_t)c->send;
		void *dst = (void *)(uintptr_t)c->recv;
		switch (c->kind) {
		case GNC_ALL_REDUCE:
			*where = "ncclAllReduce";
			r = gnc_fn.all_reduce(src, dst, c->count, c->dtype, red, comm, s);
			break;
		case GNC_BROADCAST:
			*where = "ncclBroadcast";
			r = gnc_fn.broadcast(src, dst, c->count, c->dtype, c->peer, comm, s);
			break;
		case GNC_REDUCE:
			*where = "ncclReduce";
			r = gnc_fn.reduce(src, dst, c->count, c->dtype, red, c->peer, comm, s);
			break;
		case GNC_ALL_GATHER:
			*where = "ncclAllGather";
			r = gnc_fn.all_gather(src, dst, c->count, c->dtype, comm, s);
			break;
		case GNC_REDUCE_SCATTER:
			*where = "ncclReduceScatter";
			r = gnc_fn.reduce_scatter(src, dst, c->count, c->dtype, red, comm, s);
			break;
		case GNC_SEND:
			*where = "ncclSend";
			r = gnc_fn.send(src, c->count, c->dtype, c->peer, comm, s);
			break;
		case GNC_RECV:
			*where = "ncclRecv";
			r = gnc_fn.recv(dst, c->count, c->dtype, c->peer, comm, s);
			break;
		default:
			r = GNC_INVALID_USAGE;
		}
	}
	/* a group once started must end, even after a failed call */
	end = gnc_fn.group_end();
	if (r == GNC_SUCCESS) {
		*where = "ncclGroupEnd";
		r = end;
	}
out:
	if (pm)
		gnc_fn.red_op_destroy(red, comm);
	return r;
}

#endif
