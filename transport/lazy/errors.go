package lazy

import "errors"

// Errors of this package, beside the transport package's sentinels.
var (
	// ErrPeer reports a Group.Conn for an index that is out of range or the
	// member's own.
	ErrPeer = errors.New("transport/lazy: no such peer")
	// ErrProtocol reports a dialled connection whose first frame was not an
	// answer of this package: whatever listens at the peer's address is no
	// lazy Group, or not one of ours.
	ErrProtocol = errors.New("transport/lazy: unexpected answer")
)
