package verbs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gocomms/gocomms/internal/errkind"
)

var (
	// ErrUnavailable reports that RDMA verbs cannot be used here: the
	// binary was built without cgo, the system is not Linux, libibverbs
	// cannot be loaded (ErrNoLibrary), or it finds no device (ErrNoDevice).
	// Callers that can do without RDMA test for this one.
	ErrUnavailable = errors.New("rdma/verbs: RDMA verbs unavailable")
	// ErrNoLibrary reports that libibverbs.so.1 cannot be loaded, or lacks
	// a function this package needs. It wraps ErrUnavailable.
	ErrNoLibrary = errkind.Sentinel("rdma/verbs: libibverbs cannot be loaded", ErrUnavailable)
	// ErrNoDevice reports that libibverbs loaded but lists no RDMA device,
	// or not the one asked for. It wraps ErrUnavailable.
	ErrNoDevice = errkind.Sentinel("rdma/verbs: no RDMA device", ErrUnavailable)

	// ErrClosed reports a call on an object after its Close, or after the
	// Close of the Context it belongs to. Package rdma reports its closed
	// transports with it too, so its text names no package.
	ErrClosed = errors.New("closed")
	// ErrInvalid reports an argument rejected before anything reached the
	// library: a range outside its memory region, a misaligned atomic, an
	// object from another context, a malformed Endpoint. Package rdma
	// reports its bad arguments with it too.
	ErrInvalid = errors.New("invalid argument")
	// ErrBusy reports the Close of a protection domain or completion queue
	// that queue pairs or memory regions still use.
	ErrBusy = errors.New("rdma/verbs: resource in use")
	// ErrCompletion is wrapped by every *CompletionError: a work request
	// that the device completed with a status other than success.
	ErrCompletion = errors.New("rdma/verbs: work request failed")
)

// OpError is the failure of one verbs call: which call, on which device,
// and why. Err is a syscall.Errno from the library (errors.Is(err,
// syscall.ENOMEM) for a full queue, for example) or one of this package's
// sentinels.
type OpError struct {
	Op     string // "ibv_modify_qp(RTR)", "post write", ...
	Device string // the device's name, "" before one is open
	Err    error
}

func (e *OpError) Error() string {
	why := strings.TrimPrefix(e.Err.Error(), prefix)
	if e.Device == "" {
		return prefix + e.Op + ": " + why
	}
	return prefix + e.Device + ": " + e.Op + ": " + why
}

const prefix = "rdma/verbs: "

func (e *OpError) Unwrap() error { return e.Err }

// CompletionError describes a completion whose status is not success. Of
// such a completion the device reports only these fields: its opcode and
// length are undefined.
type CompletionError struct {
	WRID      uint64
	QPN       uint32
	Status    Status
	VendorErr uint32 // the device's own code, for its vendor's tools
	Text      string // libibverbs' words for Status (ibv_wc_status_str)
}

func (e *CompletionError) Error() string {
	text := e.Text
	if text == "" {
		text = e.Status.String()
	}
	return fmt.Sprintf("rdma/verbs: work request %#x on QP %#x failed: %s (%v, vendor error %#x)",
		e.WRID, e.QPN, text, e.Status, e.VendorErr)
}

func (e *CompletionError) Unwrap() error { return ErrCompletion }

func invalid(format string, args ...any) error {
	return errkind.Of("rdma/verbs: "+fmt.Sprintf(format, args...), ErrInvalid, nil)
}
