package resume

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gocomms/gocomms/transport"
)

// Kind is the Kind of a Conn's own frames. It lies outside the engine's
// kinds (1 to 5, with flags up to 0xE5), the lazy connection's welcome
// (254) and the multiplexer's close (255).
const Kind transport.Kind = 253

// The flags a Conn sets in a data frame's Kind on the wire.
const (
	unnumbered transport.Kind = 0x20
	askAck     transport.Kind = 0x80
)

// Its own frames, by Tag.
const (
	tagResume uint32 = iota
	tagAck
	tagAckNow
)

var (
	// ErrBroken is wrapped by the error a Conn's handler is told when the
	// connection underneath broke: the Conn keeps what the peer has not
	// acknowledged, and carries on once Resume gives it a new one.
	ErrBroken = errors.New("resume: connection broken")
	// errProtocol marks a peer whose counts contradict ours: it lost
	// state, so nothing can be resumed.
	errProtocol = errors.New("resume: protocol violation")
)

// Conn is a lossless connection over a succession of connections to one
// peer's Conn. It keeps the transport.Conn contract but for one thing:
// its handler's HandleError wrapping ErrBroken says a connection broke,
// not that the Conn ended; the user then Resumes it on a new connection
// or Closes it. Every other HandleError ends it.
type Conn struct {
	comm  uint64
	ended atomic.Bool

	mu sync.Mutex
	h  transport.Handler
	// under is the current connection, epoch its number from 1: frames
	// and errors of an older one are stale.
	under transport.Conn
	epoch uint64
	// lossless says under is transport.Lossless, which a connection made
	// on first use learns once made and never unlearns: asked of every
	// frame through the layers below, it is kept once true.
	lossless bool
	err      error // the Conn ended: Sends fail with it
	pollers  int   // goroutines polling, which a new connection is told of
	// n is what numbered frames need, made with the first: a Conn over a
	// lossless connection never needs it, and a simulation holds
	// millions of Conns.
	n *numbered
}

// numbered is a Conn's state for numbered frames.
type numbered struct {
	free records
	out  outbound
	in   inbound
	// resumed says the current connection carries numbered frames: the
	// peer's resume or acknowledgement came on it, or there was nothing
	// to resume.
	resumed bool
	// broken says the current connection failed or refused a Send.
	broken bool
	// askedRoom says the current stall of the Window asked the peer to
	// acknowledge (tagAckNow).
	askedRoom  bool
	resumeSent bool // this end sent tagResume on the current connection

	// queue holds the frames for the current connection, in order, which
	// whoever drains sends outside the lock: a connection's Send may run
	// the peer's handler, and through it ours, on the calling goroutine.
	queue    []transport.Frame
	spare    []transport.Frame
	draining bool
	// drained, on the Conn's mu, wakes a Close that waits for another
	// goroutine's drain to end, so that it sends what is left itself.
	drained *sync.Cond
	// acked holds what an acknowledgement forgot, to release once mu is
	// let go; nil while a goroutine releases them.
	acked []*record
}

// numbered returns the Conn's state for numbered frames, made on first
// use. Called with c.mu held.
func (c *Conn) numbered() *numbered {
	if c.n == nil {
		c.n = &numbered{resumed: c.epoch == 1}
	}
	return c.n
}

// losslessUnder reports whether the current connection is lossless.
// Called with c.mu held.
func (c *Conn) losslessUnder() bool {
	if !c.lossless {
		c.lossless = transport.IsLossless(c.under)
	}
	return c.lossless
}

// New returns a Conn whose first connection to the peer is c, which the
// Conn owns from now on.
func New(comm uint64, c transport.Conn) *Conn {
	return &Conn{comm: comm, under: c, epoch: 1}
}

// Start begins delivery to h; only the first call has an effect.
func (c *Conn) Start(h transport.Handler) {
	c.mu.Lock()
	if c.h != nil {
		c.mu.Unlock()
		return
	}
	c.h = h
	under, epoch := c.under, c.epoch
	c.mu.Unlock()
	under.Start(reader{c: c, epoch: epoch})
}

// Send sends f: unnumbered over a lossless connection with nothing
// numbered before it waiting, else numbered and kept until the peer
// acknowledges it. It never waits for the peer.
func (c *Conn) Send(f transport.Frame) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		transport.Release(f)
		return err
	}
	n := c.n
	if c.losslessUnder() && (n == nil || !n.out.stalled()) {
		f.Header.Kind |= unnumbered
		if n == nil || len(n.queue) == 0 && !n.draining {
			under := c.under
			c.mu.Unlock()
			return under.Send(f)
		}
		n.queue = append(n.queue, f)
	} else {
		n = c.numbered()
		n.out.add(n.free.get(f))
		c.flush()
	}
	c.mu.Unlock()
	c.drain()
	return nil
}

// flush queues the numbered frames that wait, as far as the Window
// allows. A frame left waiting for room asks the peer to acknowledge at
// once, which it would otherwise do only after ackFrames frames or
// ackBytes bytes: a frame nearly as large as the Window would wait for
// ever behind a few small ones. Called with c.mu held, and c.n made.
func (c *Conn) flush() {
	n := c.n
	for n.resumed && !n.broken {
		r, ok := n.out.pending()
		if !ok {
			if n.out.stalled() && !n.askedRoom {
				n.askedRoom = true
				c.control(tagAckNow)
			}
			return
		}
		n.askedRoom = false
		n.out.transmitting(r)
		h := r.f.Header
		if r.lent() {
			h.Kind |= askAck // the sender waits for its payload back
		}
		n.queue = append(n.queue, transport.Frame{Header: h, Payload: r.f.Payload, Sent: r.sent})
	}
}

// control queues one of the Conn's own frames, which acknowledges what
// this end received. Called with c.mu held.
func (c *Conn) control(tag uint32) {
	n := c.numbered()
	n.in.acknowledged()
	n.queue = append(n.queue, transport.Frame{Header: transport.Header{Comm: c.comm, Kind: Kind, Tag: tag, Seq: n.in.received}})
}

// drain sends what is queued, unless another goroutine is at it: the
// frames go out one goroutine at a time, in order.
func (c *Conn) drain() {
	c.mu.Lock()
	n := c.n
	if n == nil || n.draining {
		c.mu.Unlock()
		return
	}
	n.draining = true
	for len(n.queue) > 0 {
		batch := n.queue
		n.queue = n.spare[:0]
		under, epoch := c.under, c.epoch
		c.mu.Unlock()
		refused := false
		for _, f := range batch {
			if refused {
				transport.Release(f)
				continue
			}
			refused = under.Send(f) != nil
		}
		clear(batch)
		c.mu.Lock()
		if refused && epoch == c.epoch {
			n.broken = true // its handler's error follows
		}
		n.spare = batch[:0]
	}
	n.draining = false
	if n.drained != nil {
		n.drained.Broadcast()
	}
	c.mu.Unlock()
}

// Resume carries on over under, a new connection to the peer's Conn,
// once the last one broke and the handler was told so: the Conn sends
// tagResume, and numbered frames again once the peer's comes back,
// starting after the last the peer received. A Conn that ended closes
// under.
func (c *Conn) Resume(under transport.Conn) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		under.Close()
		return
	}
	old := c.under
	c.under, c.lossless = under, false
	c.epoch++
	n := c.numbered()
	stats.reconnects.Add(1)
	stats.retransmitted.Add(uint64(n.out.reconnected()))
	dropped := n.queue // the old connection's, sent again if numbered
	n.queue = n.spare[:0]
	n.spare = nil
	n.resumed = !n.out.stalled()
	n.broken, n.askedRoom, n.resumeSent = false, false, true
	c.control(tagResume)
	epoch := c.epoch
	pollers := c.pollers
	c.mu.Unlock()
	for _, f := range dropped {
		transport.Release(f)
	}
	clear(dropped)
	if p, ok := under.(transport.Poller); ok {
		for range pollers {
			p.Polling(true)
		}
	}
	old.Close()
	under.Start(reader{c: c, epoch: epoch})
	c.drain()
}

// Close ends the Conn: it closes the connection, which delivers what was
// handed to it, and gives back every frame kept.
func (c *Conn) Close() error {
	c.flushBeforeClose()
	c.end(transport.ErrClosed)
	return nil
}

// flushBeforeClose sends every frame queued before Close: it waits for a
// goroutine that sends a batch to finish, and then drains the rest itself,
// so that none is dropped when the Conn ends.
func (c *Conn) flushBeforeClose() {
	c.mu.Lock()
	n := c.n
	if n == nil || c.err != nil {
		c.mu.Unlock()
		return
	}
	if n.drained == nil {
		n.drained = sync.NewCond(&c.mu)
	}
	for {
		for n.draining {
			n.drained.Wait()
		}
		if len(n.queue) == 0 {
			break
		}
		c.mu.Unlock()
		c.drain()
		c.mu.Lock()
	}
	c.mu.Unlock()
}

// end ends the Conn with err, unless it has ended, and returns the error
// it ended with, or nil if it had.
func (c *Conn) end(err error) error {
	c.drain()
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil
	}
	err = transport.Closed(err)
	c.err = err
	c.ended.Store(true)
	under := c.under
	var queued []transport.Frame
	var kept []*record
	if n := c.n; n != nil {
		queued, kept = n.queue, n.out.takeAll()
		n.queue = nil
	}
	c.mu.Unlock()
	for _, f := range queued {
		transport.Release(f)
	}
	release(kept)
	under.Close()
	return err
}

// Pollable reports whether the current connection may be polled
// (transport.Pollable): frames a poller takes from it come through the
// Conn, numbered or not.
func (c *Conn) Pollable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && transport.Pollable(c.under)
}

// PolledBySyscall forwards transport.PolledBySyscall of the current
// connection.
func (c *Conn) PolledBySyscall() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return transport.PolledBySyscall(c.under)
}

// Polling, Paused and Poll make the Conn a transport.Poller of its
// current connection's.
func (c *Conn) Polling(on bool) {
	c.mu.Lock()
	if on {
		c.pollers++
	} else {
		c.pollers--
	}
	p, _ := c.under.(transport.Poller)
	c.mu.Unlock()
	if p != nil {
		p.Polling(on)
	}
}

func (c *Conn) Paused() {
	c.mu.Lock()
	c.pollers--
	p, _ := c.under.(transport.Poller)
	c.mu.Unlock()
	if p != nil {
		p.Paused()
	}
}

func (c *Conn) Poll() bool {
	c.mu.Lock()
	p, _ := c.under.(transport.Poller)
	c.mu.Unlock()
	return p != nil && p.Poll()
}

// Lossless makes the Conn a transport.Lossless connection until it ends.
func (c *Conn) Lossless() bool { return !c.ended.Load() }

// PeerMaps forwards transport.PeerMaps of the current connection: the
// peer may map this process's shared memory (transport.Mapping).
func (c *Conn) PeerMaps() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && transport.PeerMaps(c.under)
}

// Borrows reports whether the current connection borrows lent payloads
// (transport.Borrower): unnumbered, it gives them back once written;
// numbered, the Conn does once the peer acknowledges them, which it does
// at once for a lent payload.
func (c *Conn) Borrows() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.under.(transport.Borrower)
	return ok
}

// Established reports whether the current connection to the peer's
// process is made (transport.Establisher).
func (c *Conn) Established() bool {
	c.mu.Lock()
	under := c.under
	c.mu.Unlock()
	return transport.Established(under)
}

// Lending reports whether a sender waits for a lent payload that the peer
// has not acknowledged.
func (c *Conn) Lending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n != nil && c.n.out.lent > 0
}

func (c *Conn) LocalAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.under.LocalAddr()
}

func (c *Conn) RemoteAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.under.RemoteAddr()
}

// reader is the handler of connection number epoch.
type reader struct {
	c     *Conn
	epoch uint64
}

func (r reader) HandleFrame(f transport.Frame) {
	c := r.c
	k := f.Header.Kind
	if k == Kind {
		transport.Release(f)
		c.heard(r.epoch, f.Header)
		return
	}
	if k&unnumbered != 0 {
		f.Header.Kind &^= unnumbered
		c.h.HandleFrame(f)
		return
	}
	c.mu.Lock()
	if r.epoch != c.epoch || c.err != nil {
		c.mu.Unlock()
		transport.Release(f) // the peer sends it again on the new connection
		return
	}
	// Numbered frames over a lossless connection are those sent before
	// it was made: nothing follows to acknowledge them, so at once.
	now := k&askAck != 0 || c.losslessUnder()
	f.Header.Kind &^= askAck
	if c.numbered().in.arrived(len(f.Payload)) || now {
		c.control(tagAck)
	}
	h := c.h
	c.mu.Unlock()
	c.drain()
	h.HandleFrame(f)
}

// heard handles the peer's own frame h, from connection epoch.
func (c *Conn) heard(epoch uint64, h transport.Header) {
	c.mu.Lock()
	if epoch != c.epoch || c.err != nil {
		c.mu.Unlock()
		return
	}
	var err error
	n := c.numbered()
	acked := n.acked
	n.acked = nil
	switch h.Tag {
	case tagResume, tagAck:
		if acked, err = n.out.ack(h.Seq, acked[:0]); err != nil {
			break
		}
		n.resumed = true
		if h.Tag == tagResume && !n.resumeSent {
			n.resumeSent = true
			c.control(tagResume) // the peer resumed on our first connection
		}
		c.flush()
	case tagAckNow:
		c.control(tagAck)
	default:
		err = fmt.Errorf("%w: unknown frame tag %d", errProtocol, h.Tag)
	}
	handler := c.h
	c.mu.Unlock()
	release(acked)
	c.mu.Lock()
	if n.acked == nil {
		n.acked = acked[:0]
	}
	c.mu.Unlock()
	if err != nil {
		if err := c.end(err); err != nil {
			handler.HandleError(err)
		}
		return
	}
	c.drain()
}

// HandleError ends the Conn if its connection was lossless (what it
// carried unnumbered may be lost), and tells the handler the connection
// broke otherwise.
func (r reader) HandleError(err error) {
	c := r.c
	c.mu.Lock()
	if r.epoch != c.epoch || c.err != nil {
		c.mu.Unlock()
		return
	}
	lossless := c.losslessUnder()
	if c.n != nil {
		c.n.broken = true
	}
	h := c.h
	c.mu.Unlock()
	if lossless {
		if err := c.end(err); err != nil {
			h.HandleError(err)
		}
		return
	}
	h.HandleError(fmt.Errorf("%w: %w", ErrBroken, err))
}

// stats are the process's totals over every Conn, for operators: they
// decide nothing, so they need not come from the runtime.
var stats struct {
	reconnects    atomic.Uint64
	retransmitted atomic.Uint64
}

// Stats returns how many times this process's Conns resumed on a new
// connection, and how many frames they sent again there (sent on the
// broken one, and not acknowledged).
func Stats() (reconnects, retransmitted uint64) {
	return stats.reconnects.Load(), stats.retransmitted.Load()
}
