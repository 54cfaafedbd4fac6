package cuda

import (
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/internal/errkind"
)

var (
	// ErrUnavailable reports that CUDA cannot be used here: the binary was
	// built without cgo, the system is not Linux, libcuda cannot be loaded
	// (ErrNoLibrary), the driver finds no device (ErrNoDevice), or it will
	// not initialize. Callers that can do without GPUs test for this one.
	ErrUnavailable = errors.New("gpu/cuda: CUDA unavailable")
	// ErrNoLibrary reports that libcuda.so.1 cannot be loaded, lacks an
	// entry point this package needs, or is the toolkit's stub rather than
	// the driver. It wraps ErrUnavailable.
	ErrNoLibrary = errkind.Sentinel("gpu/cuda: libcuda cannot be loaded", ErrUnavailable)
	// ErrNoDevice reports that the driver loaded but finds no GPU. It
	// wraps ErrUnavailable.
	ErrNoDevice = errkind.Sentinel("gpu/cuda: no CUDA device", ErrUnavailable)

	// ErrClosed reports a call on an object after its Close, or after the
	// Close of the Context it belongs to; a second Close reports it too.
	ErrClosed = errors.New("gpu/cuda: closed")
	// ErrInvalid reports an argument rejected before anything reached the
	// driver: a nil or zero object, a range outside an allocation, host
	// memory that an asynchronous copy may not use, an object of another
	// context.
	ErrInvalid = errors.New("gpu/cuda: invalid argument")
)

const prefix = "gpu/cuda: "

func invalid(op, format string, args ...any) error {
	return errkind.Of(prefix+op+": "+fmt.Sprintf(format, args...), ErrInvalid, nil)
}

func closed(op, what string) error {
	return errkind.Of(prefix+op+": "+what+" is closed", ErrClosed, nil)
}

// Result is a CUresult, the status code every driver call returns. As an
// error it is what an *Error unwraps to, so that errors.Is(err,
// cuda.ResultOutOfMemory) asks why a call failed. The constants name the
// codes this package or its callers tell apart; the driver has many more.
type Result int

const (
	ResultInvalidValue         Result = 1
	ResultOutOfMemory          Result = 2
	ResultNotInitialized       Result = 3
	ResultStubLibrary          Result = 34  // libcuda.so.1 is the toolkit's link-time stub
	ResultSystemDriverMismatch Result = 803 // the driver's library and its kernel module differ
	ResultNoDevice             Result = 100
	ResultInvalidDevice        Result = 101
	ResultInvalidImage         Result = 200 // not code the driver can load
	ResultInvalidContext       Result = 201
	ResultInvalidPTX           Result = 218 // the JIT compiler rejected the PTX
	ResultUnsupportedPTX       Result = 222 // PTX newer than the driver: update the driver
	ResultInvalidHandle        Result = 400
	ResultNotFound             Result = 500 // a module has no function of that name
	ResultNotReady             Result = 600 // queued work has not completed
	ResultIllegalAddress       Result = 700 // a kernel faulted: the context is unusable
	ResultLaunchTimeout        Result = 702 // the device's watchdog stopped the stream's work
	ResultNotSupported         Result = 801 // the driver or device cannot do it
	ResultUnknown              Result = 999
)

var resultNames = map[Result]string{
	ResultInvalidValue:         "CUDA_ERROR_INVALID_VALUE",
	ResultOutOfMemory:          "CUDA_ERROR_OUT_OF_MEMORY",
	ResultNotInitialized:       "CUDA_ERROR_NOT_INITIALIZED",
	ResultStubLibrary:          "CUDA_ERROR_STUB_LIBRARY",
	ResultSystemDriverMismatch: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ResultNoDevice:             "CUDA_ERROR_NO_DEVICE",
	ResultInvalidDevice:        "CUDA_ERROR_INVALID_DEVICE",
	ResultInvalidImage:         "CUDA_ERROR_INVALID_IMAGE",
	ResultInvalidContext:       "CUDA_ERROR_INVALID_CONTEXT",
	ResultInvalidPTX:           "CUDA_ERROR_INVALID_PTX",
	ResultUnsupportedPTX:       "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ResultInvalidHandle:        "CUDA_ERROR_INVALID_HANDLE",
	ResultNotFound:             "CUDA_ERROR_NOT_FOUND",
	ResultNotReady:             "CUDA_ERROR_NOT_READY",
	ResultIllegalAddress:       "CUDA_ERROR_ILLEGAL_ADDRESS",
	ResultLaunchTimeout:        "CUDA_ERROR_LAUNCH_TIMEOUT",
	ResultNotSupported:         "CUDA_ERROR_NOT_SUPPORTED",
	ResultUnknown:              "CUDA_ERROR_UNKNOWN",
}

// Error returns cuda.h's name for r, or its number where this package
// does not know it.
func (r Result) Error() string {
	if name, ok := resultNames[r]; ok {
		return name
	}
	return fmt.Sprintf("CUresult %d", int(r))
}

// Error is the failure of one driver call: which entry point, its code,
// and the driver's name and words for that code (cuGetErrorName,
// cuGetErrorString), empty where the driver has none. It unwraps to Code.
type Error struct {
	Op   string // the entry point, "cuMemAlloc_v2"
	Code Result
	Name string // "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // "out of memory"
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = e.Code.Error()
	}
	if e.Text == "" {
		return prefix + e.Op + ": " + name
	}
	return prefix + e.Op + ": " + e.Text + " (" + name + ")"
}

func (e *Error) Unwrap() error { return e.Code }
