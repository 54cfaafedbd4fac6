package backend

import "github.com/gocomms/gocomms/tensor"

// Optional interfaces: a Backend implements those whose capability it has,
// and the front asks for each with a type assertion, never for a concrete
// backend.

// Canceler is a Backend that cancels an operation by its sequence number,
// which lets the front do without a cancel function per operation.
type Canceler interface {
	Cancel(seq uint64, err error)
}

// Pooled is a Backend that issues an operation into state kept from an
// earlier one (a Room), so that a steady loop of blocking calls allocates
// nothing. The Completion it is given has a Released method (Releaser),
// which it calls once it holds nothing of the operation any more: the
// front reuses the Room, the Op and its Work after that.
type Pooled interface {
	Canceler
	// NewRoom returns empty state for IssueIn.
	NewRoom() Room
	// IssueIn is Issue with the backend's state for op in room. It reports
	// whether op was submitted; if not, done.Finished has been called and
	// Released will not be.
	IssueIn(op *Op, done Completion, room Room) bool
}

// Spinner is a Backend whose operations may end on another goroutine
// that need not wake the caller's: a blocking call asks it to Spin on
// its operation, numbered seq, before it parks on its Work. Spin returns
// once the operation ended or after a short bounded while; it lets other
// goroutines run as it waits.
type Spinner interface {
	Spin(seq uint64)
}

// Allocator is a Backend that allocates its communicator's tensors: on
// its device, and where it can, in memory registered with the
// communicator (torchcomms' memory allocator with tensor registration),
// so that a collective on it may let a peer read it in place. Alloc
// returns a zeroed tensor of dt and shape, with at least one element,
// which stays valid until Free.
type Allocator interface {
	Alloc(dt tensor.DType, shape []int) (*tensor.Tensor, error)
	Free(t *tensor.Tensor) error
}

// Room is a Pooled backend's state for one operation, reused across
// operations.
type Room interface {
	// Clear empties the room, keeping no tensor alive.
	Clear()
}

// Releaser is the Completion of an operation issued with IssueIn.
type Releaser interface {
	Released()
}
