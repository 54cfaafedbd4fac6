//go:build linux && cgo

package nccl

/*
#cgo CFLAGS: -I${SRCDIR}/../internal/dlib
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE // for dladdr
#include <stdlib.h>
#include "gnc.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// This file is the only one that calls C. Communicators cross into Go as
// unsafe.Pointer to NCCL's objects, which the garbage collector ignores;
// contexts, streams and device memory as their handles and addresses. C
// keeps no Go memory beyond a call.

const haveLoader = true

// sysLoad loads the library called name, and says why not.
func sysLoad(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var msg [512]C.char
	rc := C.gnc_load(cname, &msg[0], C.size_t(len(msg)))
	why := C.GoString(&msg[0])
	switch {
	case rc == 0:
		return nil
	case rc == -1 && strings.Contains(why, "No such file"):
		return fmt.Errorf("%s not found", name)
	case rc == -1:
		return errors.New(why)
	default:
		return fmt.Errorf("%s lacks %s: older than NCCL 2.18", name, why)
	}
}

// sysPath returns the file of the bound library, "" where the loader
// cannot say.
func sysPath() string {
	if p := C.gnc_path(); p != nil {
		return C.GoString(p)
	}
	return ""
}

func sysBindCUDA() error {
	var msg [512]C.char
	if C.gnc_bind_cuda(&msg[0], C.size_t(len(msg))) != 0 {
		return errkind.Of("nccl: "+C.GoString(&msg[0])+": NCCL needs the CUDA driver", ErrUnavailable, nil)
	}
	return nil
}

// check turns an ncclResult_t into an error: nil for success, else an
// *ncclError with NCCL's words for it.
func check(op string, rc C.gnc_result) error {
	if rc == C.GNC_SUCCESS {
		return nil
	}
	e := &ncclError{op: op, code: int(rc)}
	if s := C.gnc_error_string(rc); s != nil {
		e.text = C.GoString(s)
	}
	return e
}

func sysVersion() int { return int(C.gnc_version()) }

func sysUniqueID() ([idBytes]byte, error) {
	var id C.gnc_unique_id
	var out [idBytes]byte
	if err := check("ncclGetUniqueId", C.gnc_get_unique_id(&id)); err != nil {
		return out, err
	}
	copy(out[:], C.GoBytes(unsafe.Pointer(&id.internal[0]), idBytes))
	return out, nil
}

func sysInit(ctx uintptr, size, rank int, id [idBytes]byte) (unsafe.Pointer, error) {
	var cid C.gnc_unique_id
	for i, b := range id {
		cid.internal[i] = C.char(b)
	}
	var h C.gnc_comm
	err := check("ncclCommInitRank", C.gnc_init(C.uintptr_t(ctx), &h, C.int(size), &cid, C.int(rank)))
	return unsafe.Pointer(h), err
}

func sysSplit(ctx uintptr, h unsafe.Pointer, color, key int) (unsafe.Pointer, error) {
	var child C.gnc_comm
	err := check("ncclCommSplit", C.gnc_split(C.uintptr_t(ctx), C.gnc_comm(h), C.int(color), C.int(key), &child))
	return unsafe.Pointer(child), err
}

func sysAbort(ctx uintptr, h unsafe.Pointer) error {
	return check("ncclCommAbort", C.gnc_abort(C.uintptr_t(ctx), C.gnc_comm(h)))
}

func sysClose(ctx uintptr, h unsafe.Pointer) error {
	var where *C.char
	rc := C.gnc_close(C.uintptr_t(ctx), C.gnc_comm(h), &where)
	return check(C.GoString(where), rc)
}

// sysAsyncError returns the communicator's asynchronous error, nil while
// it has none.
func sysAsyncError(ctx uintptr, h unsafe.Pointer) error {
	var async C.gnc_result
	if err := check("ncclCommGetAsyncError", C.gnc_async_error(C.uintptr_t(ctx), C.gnc_comm(h), &async)); err != nil {
		return err
	}
	if async == C.GNC_IN_PROGRESS {
		return nil
	}
	return check("ncclCommGetAsyncError", async)
}

func sysRun(ctx uintptr, h unsafe.Pointer, stream uintptr, calls []call, op int, premul bool, scalar [8]byte) error {
	cc := make([]C.struct_gnc_call, len(calls))
	for i, c := range calls {
		cc[i] = C.struct_gnc_call{kind: C.int(c.kind), peer: C.int(c.peer), dtype: C.int(c.dtype),
			send: C.uint64_t(c.send), recv: C.uint64_t(c.recv), count: C.uint64_t(c.count)}
	}
	var first *C.struct_gnc_call
	if len(cc) > 0 {
		first = &cc[0]
	}
	pm := C.int(0)
	if premul {
		pm = 1
	}
	var where *C.char
	rc := C.gnc_run(C.uintptr_t(ctx), C.gnc_comm(h), C.uintptr_t(stream), first, C.int(len(cc)),
		C.int(op), pm, unsafe.Pointer(&scalar[0]), &where)
	if rc == C.GNC_SUCCESS {
		return nil
	}
	return check(C.GoString(where), rc)
}
