package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/internal/names"
)

// Kind says which layer of the engine a frame belongs to, so the link actor
// can route it without looking at the payload.
type Kind uint8

// The frame kinds. Zero is left unused so that a zero Header is invalid on
// its face.
const (
	Collective Kind = iota + 1
	PointToPoint
	Control
	// Link frames belong to the link layer itself (acknowledgements,
	// resumption after a reconnect): they never reach an operation.
	Link
	// Window frames carry one-sided operations on a window and their
	// replies (actors/window).
	Window
)

func (k Kind) String() string {
	return names.Of(k, "kind", []string{Collective: "collective", PointToPoint: "point-to-point",
		Control: "control", Link: "link", Window: "window"})
}

// Header is the fixed part of every frame. Transports carry it verbatim; they
// never interpret it.
type Header struct {
	Comm uint64 // communicator id
	Kind Kind
	Seq  uint64 // collective sequence number, or point-to-point ordinal
	Tag  uint32 // message tag within the operation (collective) or the user tag (point-to-point)
	Sig  uint64 // opaque operation signature, set by the sender, compared by the receiver to detect mismatched calls
}

// Frame is the unit a Conn carries: a header and one payload.
type Frame struct {
	Header Header
	// Payload's ownership moves with the frame: Send takes it, HandleFrame
	// gives it to the handler. Payloads from GetBuffer may be returned with
	// PutBuffer by whoever owns them last.
	Payload []byte
	// Sent, when set on a frame given to Send, makes Payload borrowed
	// instead: the transport neither keeps nor pools it, and calls Sent
	// exactly once, from any goroutine, when it no longer reads it (the
	// bytes are written or copied, or dropped on failure). The sender must
	// not modify Payload until then. Large sends skip a copy this way.
	//
	// A received frame may lend its payload the same way: Sent set, the
	// payload the transport's own memory (shared memory the peer wrote
	// into), which the receiver reads in place, skipping a copy. The
	// receiver must give it back with Release once done, and soon: one
	// that keeps a frame while it waits for others (an early frame
	// stashed until its operation starts) must Detach it first, since the
	// transport's memory is lent out of a small area.
	Sent func()
}

// Release gives up a frame: it calls Sent if the payload is borrowed, and
// returns it to the pool otherwise.
func Release(f Frame) {
	if f.Sent != nil {
		f.Sent()
		return
	}
	PutBuffer(f.Payload)
}

// Detach returns f with a payload of its own: a lent payload is copied
// into a pooled buffer and given back; any other frame is returned as is.
func Detach(f Frame) Frame {
	if f.Sent == nil {
		return f
	}
	p := GetBuffer(len(f.Payload))
	copy(p, f.Payload)
	f.Sent()
	return Frame{Header: f.Header, Payload: p}
}

// Handler receives what arrives on a connection. Both methods are called
// from a goroutine the handler does not own, so they must not block: the
// engine's link actor only posts the frame into its mailbox.
type Handler interface {
	// HandleFrame is called in order, one call at a time per connection.
	HandleFrame(f Frame)
	// HandleError reports that the connection failed or was closed, by the
	// peer or locally. It is called at most once, after every frame that
	// preceded the failure, and nothing is delivered after it.
	HandleError(err error)
}

// Conn is one end of a reliable, ordered, bidirectional frame connection.
type Conn interface {
	// Send queues or delivers f. It takes ownership of f.Payload, even when
	// it fails, and never waits for the receiver to make progress. After
	// Close or a failure it returns an error wrapping ErrClosed.
	Send(f Frame) error
	// Start begins delivery to h. Frames that arrived earlier are delivered
	// first, in order. Only the first call has an effect.
	Start(h Handler)
	// Close is idempotent. The peer's handler then gets HandleError
	// (wrapping ErrClosed) after every frame sent before the close; the local
	// handler, if started, gets at most one HandleError too, and frames not
	// yet delivered to it are dropped.
	Close() error
	LocalAddr() string
	RemoteAddr() string
}

// Drainer is implemented by connections whose Close returns before the
// frames already sent have left the process. Drained is closed, after
// Close, once they have or the connection has given up on them: a process
// that is about to exit waits on it, so that its last frames reach peers.
type Drainer interface {
	Drained() <-chan struct{}
}

// Establisher is implemented by a connection that is made after it is
// handed out (a lazy one, dialled on first use): Established reports
// whether the connection to the peer's process is made and open. A peer
// reached so has joined, so its silence means something; a connection
// that does not implement it is made when it exists.
type Establisher interface {
	Established() bool
}

// Established reports whether c's connection to its peer's process is
// made: per Establisher, or true.
func Established(c Conn) bool {
	e, ok := c.(Establisher)
	return !ok || e.Established()
}

// Lossless is implemented by connections that lose no frame they
// accepted short of failing for good, as memory shared within a host
// does: no reconnection ever resumes them, so a frame sent on one needs no
// record kept for resending, and the engine may send a collective's frames
// on it straight from the goroutine that runs the collective. Lossless
// reports whether that holds now: a connection made on first use knows
// once it is made.
type Lossless interface {
	Lossless() bool
}

// IsLossless reports whether c is Lossless now.
func IsLossless(c Conn) bool {
	l, ok := c.(Lossless)
	return ok && l.Lossless()
}

// Poller is implemented by connections whose received frames a goroutine
// waiting for them may take itself: Poll delivers those that have
// arrived to the handler, on the calling goroutine, with the Conn
// contract's order, and reports whether it took any. A goroutine says
// when it starts polling and when it stops (Polling), so that the
// connection's own goroutine can leave the reading to it meanwhile, and
// take it back after; one that stops because what it waited for came,
// and will likely poll again soon, says Paused instead, and the
// connection leaves the reading to pollers a little longer.
type Poller interface {
	Polling(on bool)
	Paused()
	Poll() bool
}

// Pollable reports whether c may be polled now: it is a Poller and, if it
// passes polling on to a connection underneath (as it says with a
// Pollable method of its own), that one may be.
func Pollable(c Conn) bool {
	if _, ok := c.(Poller); !ok {
		return false
	}
	if w, ok := c.(interface{ Pollable() bool }); ok {
		return w.Pollable()
	}
	return true
}

// PolledBySyscall reports whether polling c (a Conn or a Poller) costs a
// system call even when nothing has arrived, as a socket's does and
// shared memory's does not, per a PolledBySyscall method of its own,
// which connections that pass polling on forward. Where a host's ranks
// outnumber its cores, a waiting goroutine parks rather than spin on
// such a connection: each empty poll takes a core the peers' kernels
// need.
func PolledBySyscall(c any) bool {
	s, ok := c.(interface{ PolledBySyscall() bool })
	return ok && s.PolledBySyscall()
}

// Mapping is implemented by connections to a peer of this host that may
// map this process's shared memory files (nvl's Shared):
// PeerMaps reports whether it may now. The kernel lets a process map
// another's only as it lets it inspect it.
type Mapping interface {
	PeerMaps() bool
}

// PeerMaps reports whether c's peer may map this process's shared memory
// files now.
func PeerMaps(c Conn) bool {
	m, ok := c.(Mapping)
	return ok && m.PeerMaps()
}

// Borrower is implemented by connections that write a lent payload
// (Frame.Sent) without copying it. Lending to any other connection only
// adds the message that gives the payload back, so senders lend only to
// borrowers. A Network whose connections all borrow implements it too, so
// that a connection made later can be known to borrow now.
type Borrower interface {
	BorrowsPayloads()
}

// Closed returns err, made to wrap ErrClosed if it does not: the error a
// failed connection's Sends and handler report.
func Closed(err error) error {
	if errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", err, ErrClosed)
}

// Listener accepts connections dialled to its address.
type Listener interface {
	// Accept returns the next connection and the dialer's hello. It returns
	// ctx's error when ctx is done first, and ErrClosed once the listener is
	// closed.
	Accept(ctx context.Context) (Conn, []byte, error)
	Addr() string
	// Close unblocks Accept with ErrClosed. Connections already accepted stay
	// open.
	Close() error
}

// Network creates listeners and dials them.
type Network interface {
	// Listen listens at addr; "" chooses a fresh unique address. Listening
	// on an address already in use fails.
	Listen(addr string) (Listener, error)
	// Dial connects to the listener at addr and hands hello (at most
	// MaxHello bytes) to its acceptor with the connection.
	Dial(ctx context.Context, addr string, hello []byte) (Conn, error)
}

// Fabric is a Network whose members are known to it from the start, as a
// simulated network's are: the ranks of a communicator over it reach one
// another by their indices on the fabric, with no listener, address or
// store to meet through.
type Fabric interface {
	Network
	// Join makes members[me] a member of the communicator named comm,
	// whose rank r is members[r] on the fabric (nil members: r). connect opens this rank's
	// connection to a rank of comm; connected is told, from the fabric's
	// event loop, of each rank whose connection to this one came up.
	Join(comm string, members []int, me int, connected func(rank int)) (connect func(rank int) (Conn, error))
}

// MaxHello is the largest hello Dial accepts.
const MaxHello = 64 << 10

var (
	// ErrClosed reports use of a closed or failed connection or listener.
	ErrClosed = errors.New("transport: connection closed")
	// ErrRefused reports a dial to an address where nothing listens.
	ErrRefused = errors.New("transport: connection refused")
	// ErrAddrInUse reports a listen on an address that is already taken.
	ErrAddrInUse = errors.New("transport: address already in use")
)
