package lazy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// state is where a conn stands. It only moves forward, along
// idle, dialing, waiting, flushing, up, ended, skipping some: which is what
// lets a timer or a late callback check that the state it was meant for
// still holds.
type state uint8

const (
	idle     state = iota // never used: nothing on the network
	dialing               // our dial is in flight, or awaits the peer's answer
	waiting               // the peer refused our dial: its own is on its way
	flushing              // the connection is chosen; the queue is going out on it
	up                    // Sends go straight to the connection
	ended                 // closed or failed, for good
)

// conn is the lazy connection to one peer. Frames sent before the
// connection is up wait in queue, in order, and go out first; frames
// received go through the inbox, which keeps the handler's calls in order
// and one at a time whatever underlying connection they came from.
//
// mu is never held across a call into an underlying connection, the
// Network or the handler: an inproc Send may run the peer's handler in the
// caller's goroutine, the peer's handler may Send back, and that Send may
// run our link's handler, which takes mu. Nor across a frame's Sent.
type conn struct {
	g       *Group
	peer    int
	gen     uint32 // this conn's generation among ours to peer, from 1
	in      transport.Inbox
	drained chan struct{}

	mu       sync.Mutex
	st       state
	closed   bool              // Close was called
	failed   bool              // ended without a Close first: the group makes a new conn to peer
	peerGen  uint32            // the generation of the peer's Conn on the chosen connection
	pending  bool              // counted in g.pending until the state leaves dialing or waiting
	drainSet bool              // closing drained is arranged
	err      error             // what Sends return: set once closed or ended
	queue    []transport.Frame // Sends waiting for the connection, in order
	cur      *link             // the chosen connection, from flushing on
	// chosen is cur once it is set, which it is once, for the reads that
	// take no lock (a poller's, each time it polls).
	chosen atomic.Pointer[link]
	// pollers count the goroutines polling (Polling), on polled: the
	// connection made when the first began, which hears each one end.
	pollers  int
	polled   transport.Poller
	dialLink *link // our dialled connection while it awaits the answer
	// held is a dial from a newer Conn of the peer's, heldGen its
	// generation, that came while ours is connected: it waits, within the
	// dial timeout, for ours to fail, since a live link is never replaced.
	held      transport.Conn
	heldGen   uint32
	heldTimer *time.Timer
	cancel    context.CancelFunc
	timer     *time.Timer // bounds dialing, then waiting
}

var (
	_ transport.Conn    = (*conn)(nil)
	_ transport.Drainer = (*conn)(nil)
)

// borrowingConn is a conn whose underlying connections are
// transport.Borrowers. Lent frames pass through the queue and on to them
// untouched, so the conn borrows when they do.
type borrowingConn struct{ *conn }

var _ transport.Borrower = borrowingConn{}

func (borrowingConn) BorrowsPayloads() {}

func newConn(g *Group, peer int, gen uint32) *conn {
	return &conn{g: g, peer: peer, gen: gen, drained: make(chan struct{})}
}

// hasFailed reports whether c ended without being closed.
func (c *conn) hasFailed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// superseded handles a dial u from the peer's Conn of generation gen. It
// reports replace when c has failed, for a new conn to take the dial, and
// held when c is connected to an older Conn of the peer's: the peer says
// it lost that connection, but ours may be healthy (and the dial forged),
// so the dial waits until ours fails, within the dial timeout, and is
// closed unanswered if it does not. One dial waits at a time; another is
// closed at once.
func (c *conn) superseded(u transport.Conn, gen uint32) (replace, held bool) {
	c.mu.Lock()
	switch {
	case c.failed:
		c.mu.Unlock()
		return true, false
	case c.closed || c.cur == nil || gen <= c.peerGen:
		c.mu.Unlock()
		return false, false
	case c.held != nil:
		c.mu.Unlock()
		u.Close()
		return false, true
	}
	c.held, c.heldGen = u, gen
	c.heldTimer = time.AfterFunc(c.g.timeout, func() { c.dropHeld(u) })
	c.mu.Unlock()
	return false, true
}

// dropHeld closes the held dial u, unanswered, if it is still held.
func (c *conn) dropHeld(u transport.Conn) {
	c.mu.Lock()
	if c.held != u {
		c.mu.Unlock()
		return
	}
	c.held = nil
	c.mu.Unlock()
	u.Close()
}

// addr is the peer's listener address, once the group knows it.
func (c *conn) addr() string { return c.g.knownAddress(c.peer) }

// describe names the peer in errors.
func (c *conn) describe() string {
	if a := c.addr(); a != "" {
		return fmt.Sprintf("peer %d (%s)", c.peer, a)
	}
	return fmt.Sprintf("peer %d", c.peer)
}

// LocalAddr is the connection's, once there is one, and the listener's
// before.
func (c *conn) LocalAddr() string {
	if u := c.current(); u != nil {
		return u.LocalAddr()
	}
	return c.g.ln.Addr()
}

// RemoteAddr is the connection's, once there is one, and the peer's
// listener address before, once known.
func (c *conn) RemoteAddr() string {
	if u := c.current(); u != nil {
		return u.RemoteAddr()
	}
	return c.addr()
}

// Polling and Poll poll the connection it is made over, if it is a
// transport.Poller. A connection made, or made again, while a goroutine
// polls is not polled by it: its own goroutine delivers.
func (c *conn) Polling(on bool) {
	if p := c.pollingOn(on); p != nil {
		p.Polling(on)
	}
}

// Pollable reports whether the connection is made over one that may be
// polled (transport.Pollable).
func (c *conn) Pollable() bool {
	u := c.current()
	return u != nil && transport.Pollable(u)
}

// PolledBySyscall forwards transport.PolledBySyscall of the connection
// made.
func (c *conn) PolledBySyscall() bool { return transport.PolledBySyscall(c.current()) }

func (c *conn) Paused() {
	if p := c.pollingOn(false); p != nil {
		p.Paused()
	}
}

// pollingOn counts a goroutine that starts polling (on) or stops, and
// returns the connection to tell: the one made when the first began.
func (c *conn) pollingOn(on bool) transport.Poller {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		if c.pollers == 0 && c.cur != nil {
			c.polled, _ = c.cur.u.(transport.Poller)
		}
		c.pollers++
	} else {
		c.pollers--
	}
	p := c.polled
	if c.pollers == 0 {
		c.polled = nil
	}
	return p
}

func (c *conn) Poll() bool {
	p, ok := c.current().(transport.Poller)
	return ok && p.Poll()
}

// PeerMaps reports whether the connection is made, to a peer that may map
// this process's shared memory (transport.Mapping).
func (c *conn) PeerMaps() bool {
	u := c.current()
	return u != nil && transport.PeerMaps(u)
}

// Lossless reports whether the connection is made over a
// transport.Lossless one.
func (c *conn) Lossless() bool {
	u := c.current()
	return u != nil && transport.IsLossless(u)
}

func (c *conn) current() transport.Conn {
	if l := c.chosen.Load(); l != nil {
		return l.u
	}
	return nil
}

func (c *conn) Start(h transport.Handler) { c.in.Start(h) }

// Drained is closed after Close once the frames sent before it have left:
// when the connection's own Drained is, if it is a transport.Drainer, and
// otherwise once it is closed; at once if there never was a connection;
// and when a dial that had frames waiting gives up.
func (c *conn) Drained() <-chan struct{} { return c.drained }

// Send queues f until the connection is up, dialling on the first Send,
// and then hands it to the connection unchanged, lent payload and all.
func (c *conn) Send(f transport.Frame) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		transport.Release(f)
		return err
	}
	if c.st == up {
		u := c.cur.u
		c.mu.Unlock()
		if err := u.Send(f); err != nil {
			// The connection's own error: ErrClosed if it has ended, and
			// then its link hears of it too.
			return fmt.Errorf("transport/lazy: send to %s: %w", c.describe(), err)
		}
		return nil
	}
	c.queue = append(c.queue, f)
	c.dialLocked()
	return nil
}

// connect dials now, if nothing has yet, rather than on the first Send.
func (c *conn) connect() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.dialLocked()
}

// dialLocked starts the dial if c is idle. Called with mu held; releases
// it.
func (c *conn) dialLocked() {
	if c.st != idle {
		c.mu.Unlock()
		return
	}
	c.st = dialing
	ctx, cancel := context.WithTimeout(context.Background(), c.g.timeout)
	c.cancel = cancel
	c.timer = time.AfterFunc(c.g.timeout, func() { c.expire(dialing) })
	c.mu.Unlock()
	go c.dial(ctx, cancel)
}

// Close closes the connection if there is one. Frames still waiting for a
// connection keep the dial, or the wait for the peer's, going within the
// dial timeout, and the connection closes after them. The handler gets
// one error wrapping transport.ErrClosed, unless it has another coming.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	err := fmt.Errorf("transport/lazy: conn to %s closed locally: %w", c.describe(), transport.ErrClosed)
	if c.err == nil {
		c.err = err
	}
	var t teardown
	switch {
	case c.st == flushing:
		// The flusher closes the connection once the queue is out.
	case (c.st == dialing || c.st == waiting) && len(c.queue) > 0:
		c.pending = true
		c.g.pend()
	case c.st == ended:
		t.drain, t.drainOf = c.arrangeDrainLocked()
	default:
		t = c.endLocked(err, true)
	}
	c.mu.Unlock()
	c.in.CloseLocal(err, nil)
	t.run(c)
	return nil
}

// Established reports whether a connection is chosen and the conn still
// open (transport.Establisher).
func (c *conn) Established() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed && (c.st == flushing || c.st == up)
}

// teardown is what ending a conn leaves to do once mu is released.
type teardown struct {
	frames  []transport.Frame // queued Sends, to give back
	conns   []transport.Conn  // underlying connections, to close
	settled bool              // the conn leaves g.pending
	drain   bool              // close drained ...
	drainOf transport.Conn    // ... once this connection's Drained is, if it is a Drainer
	// held is the peer's held dial, of generation heldGen: a new conn
	// takes it if c failed; it is refused for good if c was closed.
	held       transport.Conn
	heldGen    uint32
	heldFailed bool
}

func (t teardown) run(c *conn) {
	for _, f := range t.frames {
		transport.Release(f)
	}
	for _, u := range t.conns {
		u.Close()
	}
	if t.settled {
		c.g.settled()
	}
	if t.held != nil {
		if t.heldFailed {
			go c.g.admitDial(t.held, c.peer, t.heldGen)
		} else {
			c.g.refuse(t.held, tagGone)
		}
	}
	if t.drain {
		c.drainAfter(t.drainOf)
	}
}

// failLocked ends c with err and tells the handler after the frames it
// has. Called with mu held; releases it.
func (c *conn) failLocked(err error) {
	t := c.endLocked(err, false)
	c.mu.Unlock()
	t.run(c)
	c.in.Fail(err)
}

// endLocked ends c: Sends fail with err, unless closed already, and what is
// queued or dialled is let go, and so is the connection if closeCur is
// set. A connection that failed is not closed here: it still delivers the
// frames it has, then reports its end to its link. The caller runs the
// teardown after releasing mu, then tells the inbox. Called with mu held.
func (c *conn) endLocked(err error, closeCur bool) teardown {
	t := teardown{frames: c.queue}
	c.queue = nil
	c.st = ended
	c.failed = !c.closed
	if c.err == nil {
		c.err = err
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.cancel != nil {
		c.cancel()
	}
	if c.dialLink != nil {
		t.conns = append(t.conns, c.dialLink.u)
		c.dialLink = nil
	}
	if closeCur && c.cur != nil {
		t.conns = append(t.conns, c.cur.u)
	}
	t.settled = c.unpendLocked()
	if c.held != nil {
		c.heldTimer.Stop()
		t.held, t.heldGen, t.heldFailed = c.held, c.heldGen, c.failed
		c.held = nil
	}
	if c.closed {
		t.drain, t.drainOf = c.arrangeDrainLocked()
	}
	return t
}

// unpendLocked reports whether c was counted in g.pending, and uncounts
// it. Called with mu held.
func (c *conn) unpendLocked() bool {
	was := c.pending
	c.pending = false
	return was
}

// arrangeDrainLocked reports whether closing drained is still to arrange,
// and after which connection. Called with mu held.
func (c *conn) arrangeDrainLocked() (bool, transport.Conn) {
	if c.drainSet {
		return false, nil
	}
	c.drainSet = true
	if c.cur == nil {
		return true, nil
	}
	return true, c.cur.u
}

// drainAfter closes drained once u's frames have left: at once unless u is
// a Drainer, whose Drained a goroutine then waits on. That wait ends within
// u's own close timeout.
func (c *conn) drainAfter(u transport.Conn) {
	d, ok := u.(transport.Drainer)
	if !ok {
		close(c.drained)
		return
	}
	go func() {
		<-d.Drained()
		close(c.drained)
	}()
}
