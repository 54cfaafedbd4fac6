/*
 * gcu.h: the part of the CUDA driver API this package uses, and the small
 * C functions that call it.
 *
 * The package builds without CUDA's headers, so the few types and values
 * it needs are declared here, named gcu_* so that they can sit next to the
 * real ones. They follow cuda.h: handles are pointers to opaque
 * structures, CUdevice is an int, CUdeviceptr is 64 bits wide (the _v2
 * ABI, CUDA 3.2 on), and every call returns a CUresult, an int.
 *
 * Every function below that works in a context takes it as its first
 * argument and makes it current on the calling thread before the driver
 * call, inside the same C call: a goroutine cannot change threads between
 * the two, so Go needs no LockOSThread. Should making it current fail,
 * that failure is returned as the call's own.
 *
 * Nothing here keeps a pointer it was given beyond the call, except the
 * asynchronous copies, whose host memory the driver reads or writes until
 * the copy completes; the Go side lets them use only pinned memory that
 * the driver allocated. A kernel launch copies its arguments during the
 * call. IPC handles cross as pointers to their 64 bytes, copied during the
 * call.
 */
#ifndef GOCOMMS_GPU_CUDA_GCU_H
#define GOCOMMS_GPU_CUDA_GCU_H

#include "dlib.h"
#include <stddef.h>
#include <string.h>

/* Values of cuda.h's enums that the helpers and the Go side use. */
enum {
	GCU_SUCCESS = 0,
	GCU_ERROR_INVALID_VALUE = 1,
	GCU_ERROR_NOT_READY = 600,     /* CUDA_ERROR_NOT_READY: work still queued */
	GCU_ERROR_NOT_SUPPORTED = 801, /* CUDA_ERROR_NOT_SUPPORTED */

	GCU_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	GCU_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,

	GCU_STREAM_DEFAULT = 0, /* synchronizes with the legacy default stream */
	GCU_STREAM_NON_BLOCKING = 1, /* does not */
	GCU_EVENT_DEFAULT = 0,  /* records timing, waits by spinning */
	GCU_EVENT_DISABLE_TIMING = 2,
	GCU_EVENT_INTERPROCESS = 4, /* needs GCU_EVENT_DISABLE_TIMING */

	GCU_IPC_HANDLE_SIZE = 64,                /* CU_IPC_HANDLE_SIZE */
	GCU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1, /* the only flag cuIpcOpenMemHandle takes */
	GCU_STREAM_WRITE_VALUE_DEFAULT = 0,      /* writes before it are visible first */
	GCU_STREAM_MEM_OP_WAIT_VALUE_64 = 4,     /* CU_STREAM_MEM_OP_WAIT_VALUE_64 */
	GCU_STREAM_MEM_OP_WRITE_VALUE_64 = 5,    /* CU_STREAM_MEM_OP_WRITE_VALUE_64 */
	GCU_MAX_BATCH = 255,                     /* the most operations one cuStreamBatchMemOp takes */

	GCU_NAME_LEN = 256,
	GCU_PCI_BUS_ID_LEN = 64,

	GCU_MAX_ARGS = 7 /* the most arguments a kernel launched here takes */
};

typedef int gcu_result;                 /* CUresult */
typedef int gcu_device;                 /* CUdevice */
typedef unsigned long long gcu_deviceptr; /* CUdeviceptr */
typedef struct gcu_ctx_st *gcu_context;   /* CUcontext */
typedef struct gcu_stream_st *gcu_stream; /* CUstream */
typedef struct gcu_event_st *gcu_event;   /* CUevent */
typedef struct gcu_mod_st *gcu_module;    /* CUmodule */
typedef struct gcu_func_st *gcu_function; /* CUfunction */

/* CUstreamBatchMemOpParams for the 64-bit writes and waits, which lay
 * out their fields alike, in cuda.h's 48 bytes. */
typedef union {
	unsigned int operation;
	struct {
		unsigned int operation;
		gcu_deviceptr address;
		unsigned long long value64;
		unsigned int flags; /* a wait's CU_STREAM_WAIT_VALUE_*; 0 for a write */
		gcu_deviceptr alias;
	} value;
	unsigned long long pad[6];
} gcu_mem_op;

/* CUipcMemHandle and CUipcEventHandle: opaque bytes, passed by value. */
typedef struct {
	char reserved[GCU_IPC_HANDLE_SIZE];
} gcu_ipc_mem_handle;
typedef struct {
	char reserved[GCU_IPC_HANDLE_SIZE];
} gcu_ipc_event_handle;

/*
 * The driver's entry points, found with dlsym by the names cuda.h maps
 * its API to: the _v2 ones where the API has them.
 */
struct gcu_fns {
	int bound;
	gcu_result (*init)(unsigned int flags);
	gcu_result (*driver_get_version)(int *version);
	gcu_result (*get_error_name)(gcu_result code, const char **name);
	gcu_result (*get_error_string)(gcu_result code, const char **text);
	gcu_result (*device_get_count)(int *count);
	gcu_result (*device_get)(gcu_device *dev, int ordinal);
	gcu_result (*device_get_name)(char *name, int len, gcu_device dev);
	gcu_result (*device_get_attribute)(int *value, int attribute, gcu_device dev);
	gcu_result (*device_total_mem)(size_t *bytes, gcu_device dev);
	gcu_result (*device_get_pci_bus_id)(char *id, int len, gcu_device dev);
	gcu_result (*primary_ctx_retain)(gcu_context *ctx, gcu_device dev);
	gcu_result (*primary_ctx_release)(gcu_device dev);
	gcu_result (*ctx_set_current)(gcu_context ctx);
	gcu_result (*mem_alloc)(gcu_deviceptr *ptr, size_t bytes);
	gcu_result (*mem_free)(gcu_deviceptr ptr);
	gcu_result (*mem_alloc_host)(void **ptr, size_t bytes);
	gcu_result (*mem_free_host)(void *ptr);
	gcu_result (*memcpy_htod)(gcu_deviceptr dst, const void *src, size_t n);
	gcu_result (*memcpy_dtoh)(void *dst, gcu_deviceptr src, size_t n);
	gcu_result (*memcpy_dtod)(gcu_deviceptr dst, gcu_deviceptr src, size_t n);
	gcu_result (*memcpy_htod_async)(gcu_deviceptr dst, const void *src, size_t n, gcu_stream s);
	gcu_result (*memcpy_dtoh_async)(void *dst, gcu_deviceptr src, size_t n, gcu_stream s);
	gcu_result (*memcpy_dtod_async)(gcu_deviceptr dst, gcu_deviceptr src, size_t n, gcu_stream s);
	gcu_result (*memset_d8)(gcu_deviceptr dst, unsigned char value, size_t n);
	gcu_result (*stream_create)(gcu_stream *s, unsigned int flags);
	gcu_result (*stream_destroy)(gcu_stream s);
	gcu_result (*stream_synchronize)(gcu_stream s);
	gcu_result (*stream_query)(gcu_stream s);
	gcu_result (*stream_wait_event)(gcu_stream s, gcu_event e, unsigned int flags);
	gcu_result (*event_create)(gcu_event *e, unsigned int flags);
	gcu_result (*event_record)(gcu_event e, gcu_stream s);
	gcu_result (*event_synchronize)(gcu_event e);
	gcu_result (*event_query)(gcu_event e);
	gcu_result (*event_destroy)(gcu_event e);
	gcu_result (*event_elapsed_time)(float *ms, gcu_event start, gcu_event end);
	gcu_result (*module_load_data)(gcu_module *m, const void *image);
	gcu_result (*module_unload)(gcu_module m);
	gcu_result (*module_get_function)(gcu_function *f, gcu_module m, const char *name);
	gcu_result (*launch_kernel)(gcu_function f, unsigned int grid_x, unsigned int grid_y,
				    unsigned int grid_z, unsigned int block_x, unsigned int block_y,
				    unsigned int block_z, unsigned int shared_bytes, gcu_stream s,
				    void **params, void **extra);
	gcu_result (*mem_get_address_range)(gcu_deviceptr *base, size_t *size, gcu_deviceptr ptr);
	gcu_result (*ipc_get_mem_handle)(gcu_ipc_mem_handle *h, gcu_deviceptr ptr);
	gcu_result (*ipc_open_mem_handle)(gcu_deviceptr *ptr, gcu_ipc_mem_handle h, unsigned int flags);
	gcu_result (*ipc_close_mem_handle)(gcu_deviceptr ptr);
	gcu_result (*ipc_get_event_handle)(gcu_ipc_event_handle *h, gcu_event e);
	gcu_result (*ipc_open_event_handle)(gcu_event *e, gcu_ipc_event_handle h);
	/* Optional: the _v2 stream memory operations came with CUDA 11.7. */
	gcu_result (*stream_write_value32)(gcu_stream s, gcu_deviceptr addr, unsigned int value,
					   unsigned int flags);
	gcu_result (*stream_write_value64)(gcu_stream s, gcu_deviceptr addr, unsigned long long value,
					   unsigned int flags);
	gcu_result (*stream_wait_value32)(gcu_stream s, gcu_deviceptr addr, unsigned int value,
					  unsigned int flags);
	gcu_result (*stream_wait_value64)(gcu_stream s, gcu_deviceptr addr, unsigned long long value,
					  unsigned int flags);
	gcu_result (*stream_batch_mem_op)(gcu_stream s, unsigned int count, gcu_mem_op *ops,
					  unsigned int flags);
};

static struct gcu_fns gcu_fn;

/*
 * gcu_load opens the library called name and, the first time one opens,
 * binds gcu_fn to it. It returns 0, -1 if the library cannot be opened, or
 * -2 if it lacks an entry point; err then holds the reason. A bound
 * library is never closed: contexts and memory made through it live as
 * long as the process may use them.
 */
static int gcu_load(const char *name, char *err, size_t errlen)
{
	struct gcu_fns t;
	void *h = dlib_open(name, err, errlen);

	if (!h)
		return -1;
	if (gcu_fn.bound) {
		dlclose(h); /* drops only the reference taken just now */
		return 0;
	}
	memset(&t, 0, sizeof t);
#define GCU_BIND(field, sym) DLIB_BIND(h, t.field, sym, 1, err, errlen)
	GCU_BIND(init, "cuInit");
	GCU_BIND(driver_get_version, "cuDriverGetVersion");
	GCU_BIND(get_error_name, "cuGetErrorName");
	GCU_BIND(get_error_string, "cuGetErrorString");
	GCU_BIND(device_get_count, "cuDeviceGetCount");
	GCU_BIND(device_get, "cuDeviceGet");
	GCU_BIND(device_get_name, "cuDeviceGetName");
	GCU_BIND(device_get_attribute, "cuDeviceGetAttribute");
	GCU_BIND(device_total_mem, "cuDeviceTotalMem_v2");
	GCU_BIND(device_get_pci_bus_id, "cuDeviceGetPCIBusId");
	GCU_BIND(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
	GCU_BIND(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
	GCU_BIND(ctx_set_current, "cuCtxSetCurrent");
	GCU_BIND(mem_alloc, "cuMemAlloc_v2");
	GCU_BIND(mem_free, "cuMemFree_v2");
	GCU_BIND(mem_alloc_host, "cuMemAllocHost_v2");
	GCU_BIND(mem_free_host, "cuMemFreeHost");
	GCU_BIND(memcpy_htod, "cuMemcpyHtoD_v2");
	GCU_BIND(memcpy_dtoh, "cuMemcpyDtoH_v2");
	GCU_BIND(memcpy_dtod, "cuMemcpyDtoD_v2");
	GCU_BIND(memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
	GCU_BIND(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
	GCU_BIND(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2");
	GCU_BIND(memset_d8, "cuMemsetD8_v2");
	GCU_BIND(stream_create, "cuStreamCreate");
	GCU_BIND(stream_destroy, "cuStreamDestroy_v2");
	GCU_BIND(stream_synchronize, "cuStreamSynchronize");
	GCU_BIND(stream_query, "cuStreamQuery");
	GCU_BIND(stream_wait_event, "cuStreamWaitEvent");
	GCU_BIND(event_create, "cuEventCreate");
	GCU_BIND(event_record, "cuEventRecord");
	GCU_BIND(event_synchronize, "cuEventSynchronize");
	GCU_BIND(event_query, "cuEventQuery");
	GCU_BIND(event_destroy, "cuEventDestroy_v2");
	GCU_BIND(event_elapsed_time, "cuEventElapsedTime");
	GCU_BIND(module_load_data, "cuModuleLoadData");
	GCU_BIND(module_unload, "cuModuleUnload");
	GCU_BIND(module_get_function, "cuModuleGetFunction");
	GCU_BIND(launch_kernel, "cuLaunchKernel");
	GCU_BIND(mem_get_address_range, "cuMemGetAddressRange_v2");
	GCU_BIND(ipc_get_mem_handle, "cuIpcGetMemHandle");
	GCU_BIND(ipc_open_mem_handle, "cuIpcOpenMemHandle_v2");
	GCU_BIND(ipc_close_mem_handle, "cuIpcCloseMemHandle");
	GCU_BIND(ipc_get_event_handle, "cuIpcGetEventHandle");
	GCU_BIND(ipc_open_event_handle, "cuIpcOpenEventHandle");
#undef GCU_BIND
	*(void **)(&t.stream_write_value32) = dlsym(h, "cuStreamWriteValue32_v2");
	*(void **)(&t.stream_write_value64) = dlsym(h, "cuStreamWriteValue64_v2");
	*(void **)(&t.stream_wait_value32) = dlsym(h, "cuStreamWaitValue32_v2");
	*(void **)(&t.stream_wait_value64) = dlsym(h, "cuStreamWaitValue64_v2");
	*(void **)(&t.stream_batch_mem_op) = dlsym(h, "cuStreamBatchMemOp_v2");
	t.bound = 1;
	gcu_fn = t;
	return 0;
}

/* The driver's name and words for code, or NULL for a code it does not know. */
static const char *gcu_error_name(gcu_result code)
{
	const char *s = NULL;
	if (gcu_fn.get_error_name(code, &s) != GCU_SUCCESS)
		return NULL;
	return s;
}

static const char *gcu_error_string(gcu_result code)
{
	const char *s = NULL;
	if (gcu_fn.get_error_string(code, &s) != GCU_SUCCESS)
		return NULL;
	return s;
}

static gcu_result gcu_init(void) { return gcu_fn.init(0); }

static gcu_result gcu_driver_version(int *version) { return gcu_fn.driver_get_version(version); }

static gcu_result gcu_device_count(int *count) { return gcu_fn.device_get_count(count); }

struct gcu_device_info {
	gcu_device handle;
	char name[GCU_NAME_LEN];
	char pci_bus_id[GCU_PCI_BUS_ID_LEN];
	size_t total_mem;
	int cc_major, cc_minor;
};

/*
 * gcu_device_info fills out for the device numbered ordinal. On failure
 * *op names the entry point that failed.
 */
static gcu_result gcu_device_info(int ordinal, struct gcu_device_info *out, const char **op)
{
	gcu_result rc;

	memset(out, 0, sizeof *out);
#define GCU_TRY(sym, call)                                              \
	do {                                                            \
		*op = sym;                                              \
		if ((rc = (call)) != GCU_SUCCESS)                       \
			return rc;                                      \
	} while (0)
	GCU_TRY("cuDeviceGet", gcu_fn.device_get(&out->handle, ordinal));
	GCU_TRY("cuDeviceGetName", gcu_fn.device_get_name(out->name, GCU_NAME_LEN, out->handle));
	GCU_TRY("cuDeviceGetPCIBusId",
		gcu_fn.device_get_pci_bus_id(out->pci_bus_id, GCU_PCI_BUS_ID_LEN, out->handle));
	GCU_TRY("cuDeviceTotalMem_v2", gcu_fn.device_total_mem(&out->total_mem, out->handle));
	GCU_TRY("cuDeviceGetAttribute", gcu_fn.device_get_attribute(&out->cc_major,
		GCU_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, out->handle));
	GCU_TRY("cuDeviceGetAttribute", gcu_fn.device_get_attribute(&out->cc_minor,
		GCU_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, out->handle));
#undef GCU_TRY
	out->name[GCU_NAME_LEN - 1] = 0;
	out->pci_bus_id[GCU_PCI_BUS_ID_LEN - 1] = 0;
	return GCU_SUCCESS;
}

static gcu_result gcu_primary_ctx_retain(gcu_device dev, gcu_context *ctx)
{
	return gcu_fn.primary_ctx_retain(ctx, dev);
}

static gcu_result gcu_primary_ctx_release(gcu_device dev) { return gcu_fn.primary_ctx_release(dev); }

#define GCU_IN(ctx)                                                     \
	do {                                                            \
		gcu_result rc_ = gcu_fn.ctx_set_current(ctx);           \
		if (rc_ != GCU_SUCCESS)                                 \
			return rc_;                                     \
	} while (0)

static gcu_result gcu_mem_alloc(gcu_context ctx, size_t n, gcu_deviceptr *ptr)
{
	GCU_IN(ctx);
	return gcu_fn.mem_alloc(ptr, n);
}

static gcu_result gcu_mem_free(gcu_context ctx, gcu_deviceptr ptr)
{
	GCU_IN(ctx);
	return gcu_fn.mem_free(ptr);
}

static gcu_result gcu_mem_alloc_host(gcu_context ctx, size_t n, void **ptr)
{
	GCU_IN(ctx);
	return gcu_fn.mem_alloc_host(ptr, n);
}

static gcu_result gcu_mem_free_host(gcu_context ctx, void *ptr)
{
	GCU_IN(ctx);
	return gcu_fn.mem_free_host(ptr);
}

static gcu_result gcu_memcpy_htod(gcu_context ctx, gcu_deviceptr dst, const void *src, size_t n)
{
	GCU_IN(ctx);
	return gcu_fn.memcpy_htod(dst, src, n);
}

static gcu_result gcu_memcpy_dtoh(gcu_context ctx, void *dst, gcu_deviceptr src, size_t n)
{
	GCU_IN(ctx);
	return gcu_fn.memcpy_dtoh(dst, src, n);
}

static gcu_result gcu_memcpy_dtod(gcu_context ctx, gcu_deviceptr dst, gcu_deviceptr src, size_t n)
{
	GCU_IN(ctx);
	return gcu_fn.memcpy_dtod(dst, src, n);
}

static gcu_result gcu_memcpy_htod_async(gcu_context ctx, gcu_deviceptr dst, const void *src,
					size_t n, gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.memcpy_htod_async(dst, src, n, s);
}

static gcu_result gcu_memcpy_dtoh_async(gcu_context ctx, void *dst, gcu_deviceptr src, size_t n,
					gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.memcpy_dtoh_async(dst, src, n, s);
}

static gcu_result gcu_memcpy_dtod_async(gcu_context ctx, gcu_deviceptr dst, gcu_deviceptr src,
					size_t n, gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.memcpy_dtod_async(dst, src, n, s);
}

static gcu_result gcu_memset_d8(gcu_context ctx, gcu_deviceptr dst, unsigned char value, size_t n)
{
	GCU_IN(ctx);
	return gcu_fn.memset_d8(dst, value, n);
}

static gcu_result gcu_stream_create(gcu_context ctx, gcu_stream *s, unsigned int flags)
{
	GCU_IN(ctx);
	return gcu_fn.stream_create(s, flags);
}

static gcu_result gcu_stream_destroy(gcu_context ctx, gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.stream_destroy(s);
}

static gcu_result gcu_stream_synchronize(gcu_context ctx, gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.stream_synchronize(s);
}

static gcu_result gcu_stream_query(gcu_context ctx, gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.stream_query(s);
}

static gcu_result gcu_stream_wait_event(gcu_context ctx, gcu_stream s, gcu_event e)
{
	GCU_IN(ctx);
	return gcu_fn.stream_wait_event(s, e, 0);
}

/* ipc asks for an event that other processes can open: one without timing. */
static gcu_result gcu_event_create(gcu_context ctx, int ipc, gcu_event *e)
{
	GCU_IN(ctx);
	return gcu_fn.event_create(e, ipc ? GCU_EVENT_DISABLE_TIMING | GCU_EVENT_INTERPROCESS
					  : GCU_EVENT_DEFAULT);
}

static gcu_result gcu_event_record(gcu_context ctx, gcu_event e, gcu_stream s)
{
	GCU_IN(ctx);
	return gcu_fn.event_record(e, s);
}

static gcu_result gcu_event_synchronize(gcu_context ctx, gcu_event e)
{
	GCU_IN(ctx);
	return gcu_fn.event_synchronize(e);
}

static gcu_result gcu_event_query(gcu_context ctx, gcu_event e)
{
	GCU_IN(ctx);
	return gcu_fn.event_query(e);
}

static gcu_result gcu_event_destroy(gcu_context ctx, gcu_event e)
{
	GCU_IN(ctx);
	return gcu_fn.event_destroy(e);
}

static gcu_result gcu_event_elapsed(gcu_context ctx, gcu_event start, gcu_event end, float *ms)
{
	GCU_IN(ctx);
	return gcu_fn.event_elapsed_time(ms, start, end);
}

/* image is PTX text, NUL-terminated; the driver compiles it for ctx's device. */
static gcu_result gcu_module_load(gcu_context ctx, const char *image, gcu_module *m)
{
	GCU_IN(ctx);
	return gcu_fn.module_load_data(m, image);
}

static gcu_result gcu_module_unload(gcu_context ctx, gcu_module m)
{
	GCU_IN(ctx);
	return gcu_fn.module_unload(m);
}

static gcu_result gcu_module_function(gcu_context ctx, gcu_module m, const char *name, gcu_function *f)
{
	GCU_IN(ctx);
	return gcu_fn.module_get_function(f, m, name);
}

/*
 * gcu_launch queues f on s over a one-dimensional grid. Each of its nargs
 * arguments is one 8-byte slot of args holding the value in its first
 * bytes, as the kernel's parameter of that size reads it; the driver
 * copies them during the call.
 */
static gcu_result gcu_launch(gcu_context ctx, gcu_function f, unsigned int grid, unsigned int block,
			     gcu_stream s, const unsigned long long *args, int nargs)
{
	unsigned long long v[GCU_MAX_ARGS];
	void *params[GCU_MAX_ARGS];

	if (nargs < 0 || nargs > GCU_MAX_ARGS)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	for (int i = 0; i < nargs; i++) {
		v[i] = args[i];
		params[i] = &v[i];
	}
	GCU_IN(ctx);
	return gcu_fn.launch_kernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL);
}

/* Interprocess memory and events. A handle is 64 bytes at h. */

static gcu_result gcu_mem_get_address_range(gcu_context ctx, gcu_deviceptr ptr, gcu_deviceptr *base,
					    size_t *size)
{
	GCU_IN(ctx);
	return gcu_fn.mem_get_address_range(base, size, ptr);
}

static gcu_result gcu_ipc_get_mem_handle(gcu_context ctx, gcu_deviceptr ptr, void *h)
{
	gcu_ipc_mem_handle v;
	gcu_result rc;

	GCU_IN(ctx);
	rc = gcu_fn.ipc_get_mem_handle(&v, ptr);
	memcpy(h, &v, sizeof v);
	return rc;
}

static gcu_result gcu_ipc_open_mem_handle(gcu_context ctx, const void *h, gcu_deviceptr *ptr)
{
	gcu_ipc_mem_handle v;

	memcpy(&v, h, sizeof v);
	GCU_IN(ctx);
	return gcu_fn.ipc_open_mem_handle(ptr, v, GCU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
}

static gcu_result gcu_ipc_close_mem_handle(gcu_context ctx, gcu_deviceptr ptr)
{
	GCU_IN(ctx);
	return gcu_fn.ipc_close_mem_handle(ptr);
}

static gcu_result gcu_ipc_get_event_handle(gcu_context ctx, gcu_event e, void *h)
{
	gcu_ipc_event_handle v;
	gcu_result rc;

	GCU_IN(ctx);
	rc = gcu_fn.ipc_get_event_handle(&v, e);
	memcpy(h, &v, sizeof v);
	return rc;
}

static gcu_result gcu_ipc_open_event_handle(gcu_context ctx, const void *h, gcu_event *e)
{
	gcu_ipc_event_handle v;

	memcpy(&v, h, sizeof v);
	GCU_IN(ctx);
	return gcu_fn.ipc_open_event_handle(e, v);
}

/*
 * Stream memory operations, on a 4- or 8-byte word (width) of device
 * memory. flags is a CU_STREAM_WAIT_VALUE_* for a wait. A driver without
 * the _v2 entry points answers CUDA_ERROR_NOT_SUPPORTED, as one whose
 * device cannot run them does.
 */
static gcu_result gcu_stream_write_value(gcu_context ctx, gcu_stream s, gcu_deviceptr addr,
					 unsigned long long value, int width)
{
	GCU_IN(ctx);
	if (width == 4)
		return gcu_fn.stream_write_value32 ? gcu_fn.stream_write_value32(s, addr, (unsigned int)value,
					GCU_STREAM_WRITE_VALUE_DEFAULT) : GCU_ERROR_NOT_SUPPORTED;
	if (width == 8)
		return gcu_fn.stream_write_value64 ? gcu_fn.stream_write_value64(s, addr, value,
					GCU_STREAM_WRITE_VALUE_DEFAULT) : GCU_ERROR_NOT_SUPPORTED;
	return GCU_ERROR_INVALID_VALUE;
}

static gcu_result gcu_stream_wait_value(gcu_context ctx, gcu_stream s, gcu_deviceptr addr,
					unsigned long long value, int width, unsigned int flags)
{
	GCU_IN(ctx);
	if (width == 4)
		return gcu_fn.stream_wait_value32 ? gcu_fn.stream_wait_value32(s, addr, (unsigned int)value,
					flags) : GCU_ERROR_NOT_SUPPORTED;
	if (width == 8)
		return gcu_fn.stream_wait_value64 ? gcu_fn.stream_wait_value64(s, addr, value, flags)
						  : GCU_ERROR_NOT_SUPPORTED;
	return GCU_ERROR_INVALID_VALUE;
}

/*
 * gcu_stream_mem_ops queues n 64-bit writes and waits on s, in order, in
 * one driver call for each GCU_MAX_BATCH of them. Each is three words of
 * ops: 0 for a write or 1 + the CU_STREAM_WAIT_VALUE_* of a wait, the
 * address, the value.
 */
static gcu_result gcu_stream_mem_ops(gcu_context ctx, gcu_stream s, const unsigned long long *ops, int n)
{
	gcu_mem_op batch[GCU_MAX_BATCH];

	GCU_IN(ctx);
	if (!gcu_fn.stream_batch_mem_op)
		return GCU_ERROR_NOT_SUPPORTED;
	for (int done = 0; done < n;) {
		int k = n - done < GCU_MAX_BATCH ? n - done : GCU_MAX_BATCH;
		gcu_result rc;

		memset(batch, 0, sizeof batch[0] * (size_t)k);
		for (int i = 0; i < k; i++) {
			const unsigned long long *op = ops + 3 * (done + i);
			batch[i].value.operation = op[0] ? GCU_STREAM_MEM_OP_WAIT_VALUE_64 : GCU_STREAM_MEM_OP_WRITE_VALUE_64;
			batch[i].value.flags = op[0] ? (unsigned int)(op[0] - 1) : GCU_STREAM_WRITE_VALUE_DEFAULT;
			batch[i].value.address = op[1];
			batch[i].value.value64 = op[2];
		}
		rc = gcu_fn.stream_batch_mem_op(s, (unsigned int)k, batch, 0);
		if (rc != GCU_SUCCESS)
			return rc;
		done += k;
	}
	return GCU_SUCCESS;
}

#undef GCU_IN

#endif
