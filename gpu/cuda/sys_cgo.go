//go:build linux && cgo

package cuda

/*
#cgo CFLAGS: -I${SRCDIR}/../../internal/dlib
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "gcu.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// This file is the only one that calls C. Contexts, streams and events
// cross into Go as unsafe.Pointer to the driver's objects, which the
// garbage collector ignores; device memory crosses as its address. C keeps
// no Go memory beyond a call: the asynchronous copies, which do keep host
// memory, are given only memory the driver allocated.

const haveDriver = true

func sysLoad(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var msg [512]C.char
	switch C.gcu_load(cname, &msg[0], C.size_t(len(msg))) {
	case 0:
		return nil
	case -1:
		return errkind.Of(fmt.Sprintf("gpu/cuda: cannot load %s: %s (the NVIDIA driver provides it; "+
			"the CUDA toolkit alone does not)", name, C.GoString(&msg[0])), ErrNoLibrary, nil)
	default:
		return errkind.Of(fmt.Sprintf("gpu/cuda: %s lacks %s: older than the CUDA 11 driver (R450)",
			name, C.GoString(&msg[0])), ErrNoLibrary, nil)
	}
}

// check turns a CUresult into an error: nil for success, else an *Error
// with the driver's name and words for the code.
func check(op string, rc C.gcu_result) error {
	if rc == C.GCU_SUCCESS {
		return nil
	}
	e := &Error{Op: op, Code: Result(rc)}
	if s := C.gcu_error_name(rc); s != nil {
		e.Name = C.GoString(s)
	}
	if s := C.gcu_error_string(rc); s != nil {
		e.Text = C.GoString(s)
	}
	return e
}

// done turns a query's CUresult into whether the work it asked about has
// completed: CUDA_ERROR_NOT_READY is an answer, not a failure.
func done(op string, rc C.gcu_result) (bool, error) {
	if rc == C.GCU_ERROR_NOT_READY {
		return false, nil
	}
	return rc == C.GCU_SUCCESS, check(op, rc)
}

func sysInit() error { return check("cuInit", C.gcu_init()) }

func sysDriverVersion() (int, error) {
	var v C.int
	err := check("cuDriverGetVersion", C.gcu_driver_version(&v))
	return int(v), err
}

func sysDeviceCount() (int, error) {
	var n C.int
	err := check("cuDeviceGetCount", C.gcu_device_count(&n))
	return int(n), err
}

func sysDevice(ordinal int) (Device, error) {
	var info C.struct_gcu_device_info
	var op *C.char
	if rc := C.gcu_device_info(C.int(ordinal), &info, &op); rc != C.GCU_SUCCESS {
		return Device{}, check(C.GoString(op), rc)
	}
	return Device{
		ordinal:  ordinal,
		handle:   int32(info.handle),
		name:     C.GoString(&info.name[0]),
		pciBusID: C.GoString(&info.pci_bus_id[0]),
		totalMem: uint64(info.total_mem),
		ccMajor:  int(info.cc_major),
		ccMinor:  int(info.cc_minor),
	}, nil
}

func sysPrimaryCtxRetain(dev int32) (unsafe.Pointer, error) {
	var ctx C.gcu_context
	if err := check("cuDevicePrimaryCtxRetain", C.gcu_primary_ctx_retain(C.gcu_device(dev), &ctx)); err != nil {
		return nil, err
	}
	return unsafe.Pointer(ctx), nil
}

func sysPrimaryCtxRelease(dev int32) error {
	return check("cuDevicePrimaryCtxRelease_v2", C.gcu_primary_ctx_release(C.gcu_device(dev)))
}

func sysMemAlloc(ctx unsafe.Pointer, n int) (uint64, error) {
	var p C.gcu_deviceptr
	err := check("cuMemAlloc_v2", C.gcu_mem_alloc(C.gcu_context(ctx), C.size_t(n), &p))
	return uint64(p), err
}

func sysMemFree(ctx unsafe.Pointer, p uint64) error {
	return check("cuMemFree_v2", C.gcu_mem_free(C.gcu_context(ctx), C.gcu_deviceptr(p)))
}

func sysMemAllocHost(ctx unsafe.Pointer, n int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := check("cuMemAllocHost_v2", C.gcu_mem_alloc_host(C.gcu_context(ctx), C.size_t(n), &p))
	return p, err
}

func sysMemFreeHost(ctx, p unsafe.Pointer) error {
	return check("cuMemFreeHost", C.gcu_mem_free_host(C.gcu_context(ctx), p))
}

// The synchronous copies take Go memory: the driver is done with it when
// the call returns.

func sysCopyHtoD(ctx unsafe.Pointer, dst uint64, src []byte) error {
	return check("cuMemcpyHtoD_v2", C.gcu_memcpy_htod(C.gcu_context(ctx), C.gcu_deviceptr(dst),
		unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

func sysCopyDtoH(ctx unsafe.Pointer, dst []byte, src uint64) error {
	return check("cuMemcpyDtoH_v2", C.gcu_memcpy_dtoh(C.gcu_context(ctx), unsafe.Pointer(&dst[0]),
		C.gcu_deviceptr(src), C.size_t(len(dst))))
}

func sysCopyDtoD(ctx unsafe.Pointer, dst, src uint64, n int) error {
	return check("cuMemcpyDtoD_v2", C.gcu_memcpy_dtod(C.gcu_context(ctx), C.gcu_deviceptr(dst),
		C.gcu_deviceptr(src), C.size_t(n)))
}

func sysMemset(ctx unsafe.Pointer, dst uint64, value byte, n int) error {
	return check("cuMemsetD8_v2", C.gcu_memset_d8(C.gcu_context(ctx), C.gcu_deviceptr(dst),
		C.uchar(value), C.size_t(n)))
}

// The asynchronous copies take pinned memory the driver allocated, never
// Go memory: the driver uses it after the call returns.

func sysCopyHtoDAsync(ctx, s unsafe.Pointer, dst uint64, src unsafe.Pointer, n int) error {
	return check("cuMemcpyHtoDAsync_v2", C.gcu_memcpy_htod_async(C.gcu_context(ctx),
		C.gcu_deviceptr(dst), src, C.size_t(n), C.gcu_stream(s)))
}

func sysCopyDtoHAsync(ctx, s, dst unsafe.Pointer, src uint64, n int) error {
	return check("cuMemcpyDtoHAsync_v2", C.gcu_memcpy_dtoh_async(C.gcu_context(ctx), dst,
		C.gcu_deviceptr(src), C.size_t(n), C.gcu_stream(s)))
}

func sysCopyDtoDAsync(ctx, s unsafe.Pointer, dst, src uint64, n int) error {
	return check("cuMemcpyDtoDAsync_v2", C.gcu_memcpy_dtod_async(C.gcu_context(ctx),
		C.gcu_deviceptr(dst), C.gcu_deviceptr(src), C.size_t(n), C.gcu_stream(s)))
}

func sysStreamCreate(ctx unsafe.Pointer, nonBlocking bool) (unsafe.Pointer, error) {
	var s C.gcu_stream
	flags := C.uint(C.GCU_STREAM_DEFAULT)
	if nonBlocking {
		flags = C.GCU_STREAM_NON_BLOCKING
	}
	err := check("cuStreamCreate", C.gcu_stream_create(C.gcu_context(ctx), &s, flags))
	return unsafe.Pointer(s), err
}

func sysStreamDestroy(ctx, s unsafe.Pointer) error {
	return check("cuStreamDestroy_v2", C.gcu_stream_destroy(C.gcu_context(ctx), C.gcu_stream(s)))
}

func sysStreamSynchronize(ctx, s unsafe.Pointer) error {
	return check("cuStreamSynchronize", C.gcu_stream_synchronize(C.gcu_context(ctx), C.gcu_stream(s)))
}

func sysStreamQuery(ctx, s unsafe.Pointer) (bool, error) {
	return done("cuStreamQuery", C.gcu_stream_query(C.gcu_context(ctx), C.gcu_stream(s)))
}

func sysStreamWaitEvent(ctx, s, e unsafe.Pointer) error {
	return check("cuStreamWaitEvent", C.gcu_stream_wait_event(C.gcu_context(ctx), C.gcu_stream(s),
		C.gcu_event(e)))
}

func sysEventCreate(ctx unsafe.Pointer, ipc bool) (unsafe.Pointer, error) {
	var e C.gcu_event
	flag := C.int(0)
	if ipc {
		flag = 1
	}
	err := check("cuEventCreate", C.gcu_event_create(C.gcu_context(ctx), flag, &e))
	return unsafe.Pointer(e), err
}

func sysEventRecord(ctx, e, s unsafe.Pointer) error {
	return check("cuEventRecord", C.gcu_event_record(C.gcu_context(ctx), C.gcu_event(e), C.gcu_stream(s)))
}

func sysEventSynchronize(ctx, e unsafe.Pointer) error {
	return check("cuEventSynchronize", C.gcu_event_synchronize(C.gcu_context(ctx), C.gcu_event(e)))
}

func sysEventQuery(ctx, e unsafe.Pointer) (bool, error) {
	return done("cuEventQuery", C.gcu_event_query(C.gcu_context(ctx), C.gcu_event(e)))
}

func sysEventDestroy(ctx, e unsafe.Pointer) error {
	return check("cuEventDestroy_v2", C.gcu_event_destroy(C.gcu_context(ctx), C.gcu_event(e)))
}

func sysEventElapsed(ctx, start, end unsafe.Pointer) (float32, error) {
	var ms C.float
	err := check("cuEventElapsedTime", C.gcu_event_elapsed(C.gcu_context(ctx), C.gcu_event(start),
		C.gcu_event(end), &ms))
	return float32(ms), err
}

// sysModuleLoad copies ptx into C memory with the NUL the driver looks
// for; the driver compiles it during the call.
func sysModuleLoad(ctx unsafe.Pointer, ptx []byte) (unsafe.Pointer, error) {
	img := (*C.char)(C.malloc(C.size_t(len(ptx) + 1)))
	defer C.free(unsafe.Pointer(img))
	b := unsafe.Slice((*byte)(unsafe.Pointer(img)), len(ptx)+1)
	b[copy(b, ptx)] = 0
	var m C.gcu_module
	err := check("cuModuleLoadData", C.gcu_module_load(C.gcu_context(ctx), img, &m))
	return unsafe.Pointer(m), err
}

func sysModuleUnload(ctx, m unsafe.Pointer) error {
	return check("cuModuleUnload", C.gcu_module_unload(C.gcu_context(ctx), C.gcu_module(m)))
}

func sysModuleFunction(ctx, m unsafe.Pointer, name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.gcu_function
	err := check("cuModuleGetFunction", C.gcu_module_function(C.gcu_context(ctx), C.gcu_module(m), cname, &f))
	return unsafe.Pointer(f), err
}

func sysLaunch(ctx, f unsafe.Pointer, grid, block uint32, s unsafe.Pointer, args []uint64) error {
	return check("cuLaunchKernel", C.gcu_launch(C.gcu_context(ctx), C.gcu_function(f), C.uint(grid),
		C.uint(block), C.gcu_stream(s), (*C.ulonglong)(unsafe.Pointer(unsafe.SliceData(args))), C.int(len(args))))
}

func sysMemAddressRange(ctx unsafe.Pointer, p uint64) (base uint64, size int, err error) {
	var b C.gcu_deviceptr
	var n C.size_t
	err = check("cuMemGetAddressRange_v2", C.gcu_mem_get_address_range(C.gcu_context(ctx),
		C.gcu_deviceptr(p), &b, &n))
	return uint64(b), int(n), err
}

// The IPC calls take and fill a Go array: C copies it during the call.

func sysIpcGetMemHandle(ctx unsafe.Pointer, p uint64, h *[ipcHandleSize]byte) error {
	return check("cuIpcGetMemHandle", C.gcu_ipc_get_mem_handle(C.gcu_context(ctx), C.gcu_deviceptr(p),
		unsafe.Pointer(h)))
}

func sysIpcOpenMemHandle(ctx unsafe.Pointer, h *[ipcHandleSize]byte) (uint64, error) {
	var p C.gcu_deviceptr
	err := check("cuIpcOpenMemHandle_v2", C.gcu_ipc_open_mem_handle(C.gcu_context(ctx), unsafe.Pointer(h), &p))
	return uint64(p), err
}

func sysIpcCloseMemHandle(ctx unsafe.Pointer, p uint64) error {
	return check("cuIpcCloseMemHandle", C.gcu_ipc_close_mem_handle(C.gcu_context(ctx), C.gcu_deviceptr(p)))
}

func sysIpcGetEventHandle(ctx, e unsafe.Pointer, h *[ipcHandleSize]byte) error {
	return check("cuIpcGetEventHandle", C.gcu_ipc_get_event_handle(C.gcu_context(ctx), C.gcu_event(e),
		unsafe.Pointer(h)))
}

func sysIpcOpenEventHandle(ctx unsafe.Pointer, h *[ipcHandleSize]byte) (unsafe.Pointer, error) {
	var e C.gcu_event
	err := check("cuIpcOpenEventHandle", C.gcu_ipc_open_event_handle(C.gcu_context(ctx), unsafe.Pointer(h), &e))
	return unsafe.Pointer(e), err
}

func sysStreamWriteValue(ctx, s unsafe.Pointer, addr, v uint64, width int) error {
	op := "cuStreamWriteValue32_v2"
	if width == 8 {
		op = "cuStreamWriteValue64_v2"
	}
	return check(op, C.gcu_stream_write_value(C.gcu_context(ctx), C.gcu_stream(s), C.gcu_deviceptr(addr),
		C.ulonglong(v), C.int(width)))
}

func sysStreamWaitValue(ctx, s unsafe.Pointer, addr, v uint64, width int, cond WaitCond) error {
	op := "cuStreamWaitValue32_v2"
	if width == 8 {
		op = "cuStreamWaitValue64_v2"
	}
	return check(op, C.gcu_stream_wait_value(C.gcu_context(ctx), C.gcu_stream(s), C.gcu_deviceptr(addr),
		C.ulonglong(v), C.int(width), C.uint(cond)))
}

// sysStreamMemOps queues 64-bit writes and waits, three words each (see
// gcu_stream_mem_ops), which C reads during the call.
func sysStreamMemOps(ctx, s unsafe.Pointer, ops []uint64) error {
	return check("cuStreamBatchMemOp_v2", C.gcu_stream_mem_ops(C.gcu_context(ctx), C.gcu_stream(s),
		(*C.ulonglong)(unsafe.Pointer(unsafe.SliceData(ops))), C.int(len(ops)/3)))
}
