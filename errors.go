package gocomms

import "github.com/gocomms/gocomms/commerr"

// Errors, matched with errors.Is. Every error an operation returns is an
// *OpError wrapping one of them.
var (
	ErrInvalidArgument = commerr.ErrInvalidArgument
	ErrTimeout         = commerr.ErrTimeout
	ErrAborted         = commerr.ErrAborted
	ErrPeerFailed      = commerr.ErrPeerFailed
	ErrPeerCanceled    = commerr.ErrPeerCanceled
	ErrRevoked         = commerr.ErrRevoked
	ErrFinalized       = commerr.ErrFinalized
	ErrNotInitialized  = commerr.ErrNotInitialized
)

// OpError reports a failed operation: the communicator, the operation and
// its sequence number, the ranks involved and the cause.
type OpError = commerr.OpError
