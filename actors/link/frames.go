package link

import (
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/transport"
)

// The link layer's own frames (Kind transport.Link), by Tag. They travel
// in order with the data frames, on the link's resume.Conn.
const (
	// tagFin says the sender closes the link on purpose: the connection
	// ending next is no fault to reconnect from.
	tagFin uint32 = iota
	// tagFinAck answers tagFin: everything before the Fin arrived, so the
	// closing link may go.
	tagFinAck
	// tagPing asks for a tagPong at once: a link that waits on its peer
	// and has heard nothing for a while checks that the peer still runs.
	tagPing
	tagPong
	// tagRelease says the sender's rank no longer uses the link
	// (Release): it sends nothing more on this connection. The link ends,
	// with no failure to anyone, once each end has sent its own.
	tagRelease
	// tagDecline answers a tagRelease the sender's rank will not match
	// (Decline): the link goes on, and the released end takes it back.
	tagDecline
)

var (
	// errSilent marks a peer the link waited on and heard nothing from.
	errSilent = errors.New("peer silent")
	// errStopped tells a collective on the plane of a stopped link that
	// nothing more comes.
	errStopped = fmt.Errorf("link stopped: %w", transport.ErrClosed)
	// errReleased ends the plane of a link both ends released.
	errReleased = fmt.Errorf("link released: %w", transport.ErrClosed)
)
