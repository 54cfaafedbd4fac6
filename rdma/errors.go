package rdma

import (
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/rdma/verbs"
)

// Sentinels for errors.Is. Every error of a Transport is an *OpError whose
// chain holds one of them, or a context's error. ErrClosed and ErrInvalid
// are package verbs' own: a closed object or a bad argument is one error
// whichever layer finds it.
var (
	// ErrBroken reports a transport that failed for good: its connection
	// died, the peer closed it, the peer broke the protocol, a call's
	// context ended while its request was on the wire, or (verbs) the
	// device failed a request, when the error also wraps the
	// *verbs.CompletionError. The first cause is kept, and every later call
	// fails at once with it; Close the transport and build a new one.
	ErrBroken = errors.New("transport broken")
	// ErrClosed reports a call on a closed transport, or one that was
	// pending when Close was called.
	ErrClosed = verbs.ErrClosed
	// ErrNotConnected reports an operation on a transport that has not
	// connected to a peer.
	ErrNotConnected = errors.New("not connected")
	// ErrBounds reports a view or remote range that does not fit: past the
	// end of its buffer, of a length other than the one the operation
	// needs, or, for atomics, not an aligned 8-byte word.
	ErrBounds = errors.New("out of bounds")
	// ErrUnregistered reports memory that is not registered: a local view
	// of deregistered memory, or a remote key the peer does not know, never
	// had, or has deregistered.
	ErrUnregistered = errors.New("memory not registered")
	// ErrUnsupported reports a provider that is not available in this
	// build or on this machine (for verbs, the error also wraps
	// verbs.ErrUnavailable and says why), a peer address of another
	// provider, or an atomic on a device that performs none.
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalid reports malformed input: a handle or address that does
	// not decode, a nil view, a bad option.
	ErrInvalid = verbs.ErrInvalid
)

// OpError is the error of a Transport's call: which call, with which peer,
// and why.
type OpError struct {
	Op   string // "bind", "connect", "write", "read", "fetch-add", "compare-and-swap", "wait-for-write"
	Peer string // the peer's host:port, or "" before there is one
	Err  error
}

func (e *OpError) Error() string {
	if e.Peer == "" {
		return "rdma: " + e.Op + ": " + e.Err.Error()
	}
	return fmt.Sprintf("rdma: %s with peer %s: %v", e.Op, e.Peer, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }
