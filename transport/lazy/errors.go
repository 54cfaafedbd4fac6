package lazy

import (
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/transport"
)

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

// closedErr makes err one that wraps transport.ErrClosed, as every error a
// Conn's Sends and handler see does.
func closedErr(err error) error {
	if errors.Is(err, transport.ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", err, transport.ErrClosed)
}
