package mux

import "errors"

// Errors of this package, beside the transport package's sentinels.
var (
	// ErrOpened reports an Open of a comm that was already opened on the
	// same Mux, even if it has been closed since.
	ErrOpened = errors.New("transport/mux: comm already opened")
	// ErrHeader reports a Send whose header does not belong on the virtual
	// conn: Comm is another communicator's, or Kind is KindClose.
	ErrHeader = errors.New("transport/mux: header does not match the virtual conn")
	// ErrHeldLimit reports frames for comms not yet opened beyond the
	// WithMaxHeld limit. The Mux fails with an error wrapping it and
	// transport.ErrClosed.
	ErrHeldLimit = errors.New("transport/mux: held frames over the limit")
)
