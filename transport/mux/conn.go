package mux

import (
	"fmt"

	"github.com/gocomms/gocomms/internal/fifo"
	"github.com/gocomms/gocomms/transport"
)

// vconn is one comm's virtual conn, or, until Open, the frames held for it.
// It delivers the way transport's inproc pipe does: whoever finds it started
// and idle becomes its deliverer and calls the handler, with m.mu released,
// until nothing is left; everyone else only queues. That gives one handler
// call at a time, FIFO order across the receiver and Start, and lets a
// handler Send or Close from inside a call.
//
// Every field but m and comm is guarded by m.mu. Invariant: a started
// vconn that nobody is delivering has nothing left to deliver.
type vconn struct {
	m    *Mux
	comm uint64

	opened     bool
	held       int // bytes counted against the hold limit, until Open
	handler    transport.Handler
	delivering bool // a goroutine is inside drain
	queue      fifo.Queue[transport.Frame]

	sendErr  error // non-nil once Sends must fail
	recvErr  error // to deliver after the queue, once; nothing is queued after it
	reported bool  // recvErr has been handed to the handler
	shut     bool  // closed locally
}

var _ transport.Conn = (*vconn)(nil)

// borrowingConn is a vconn over a transport.Borrower. Send hands lent
// payloads on as they are, so the virtual conn borrows when its
// underlying conn does.
type borrowingConn struct{ *vconn }

var _ transport.Borrower = borrowingConn{}

func (borrowingConn) BorrowsPayloads() {}

// Established reports whether the shared connection underneath is made
// (transport.Establisher).
func (c *vconn) Established() bool { return transport.Established(c.m.conn) }

// Polling and Poll poll the shared connection underneath, if it is a
// transport.Poller: what it delivers goes to every virtual conn's
// handler, as the shared connection's frames always do.
func (c *vconn) Polling(on bool) {
	if p, ok := c.m.conn.(transport.Poller); ok {
		p.Polling(on)
	}
}

// Pollable reports whether the shared connection underneath may be
// polled (transport.Pollable).
func (c *vconn) Pollable() bool { return transport.Pollable(c.m.conn) }

// PolledBySyscall forwards transport.PolledBySyscall of the shared
// connection underneath.
func (c *vconn) PolledBySyscall() bool { return transport.PolledBySyscall(c.m.conn) }

func (c *vconn) Paused() {
	if p, ok := c.m.conn.(transport.Poller); ok {
		p.Paused()
	}
}

func (c *vconn) Poll() bool {
	p, ok := c.m.conn.(transport.Poller)
	return ok && p.Poll()
}

// PeerMaps reports whether the peer of the shared connection underneath
// may map this process's shared memory (transport.Mapping).
func (c *vconn) PeerMaps() bool { return transport.PeerMaps(c.m.conn) }

// Lossless reports whether the shared connection underneath is
// (transport.Lossless).
func (c *vconn) Lossless() bool { return transport.IsLossless(c.m.conn) }

func (c *vconn) LocalAddr() string  { return c.m.conn.LocalAddr() }
func (c *vconn) RemoteAddr() string { return c.m.conn.RemoteAddr() }

// Send hands f to the underlying conn unchanged. Its Comm must be c's and
// its Kind not KindClose: rewriting a foreign Comm would hide a frame sent
// on the wrong communicator's conn.
func (c *vconn) Send(f transport.Frame) error {
	c.m.mu.Lock()
	err := c.sendErr
	c.m.mu.Unlock()
	if err != nil {
		transport.Release(f)
		return err
	}
	if f.Header.Comm != c.comm || f.Header.Kind == KindClose {
		transport.Release(f)
		return fmt.Errorf("transport/mux: send on comm %#x: frame for comm %#x of kind %v: %w", c.comm, f.Header.Comm, f.Header.Kind, ErrHeader)
	}
	// No lock is held here: an inproc Send may run the peer's handler, and
	// through it our own receiver, in this goroutine.
	if err := c.m.conn.Send(f); err != nil {
		return commErr(c.comm, err)
	}
	return nil
}

func (c *vconn) Start(h transport.Handler) {
	if h == nil {
		return
	}
	c.m.mu.Lock()
	if c.handler != nil {
		c.m.mu.Unlock()
		return
	}
	c.handler = h
	c.kick()
}

// Close sends the close marker, unless the peer's close or a failure
// already ended c, and drops what c has not delivered yet. A Send racing
// with Close may reach the peer after the marker; the peer drops it.
func (c *vconn) Close() error {
	m := c.m
	m.mu.Lock()
	if c.shut {
		m.mu.Unlock()
		return nil
	}
	mark := c.sendErr == nil
	c.shutdown(fmt.Errorf("transport/mux: comm %#x on %s closed locally: %w", c.comm, m.describe(), transport.ErrClosed))
	m.mu.Unlock()
	if mark {
		// A failure here fails the underlying conn, which tells the peer.
		_ = m.conn.Send(transport.Frame{Header: transport.Header{Comm: c.comm, Kind: KindClose}})
	}
	m.mu.Lock()
	c.kick()
	return nil
}

// shutdown closes c locally with err: Sends fail, undelivered frames are
// dropped, and the handler gets err unless it has another error coming.
// Called with m.mu held.
func (c *vconn) shutdown(err error) {
	c.shut = true
	for f, ok := c.queue.Pop(); ok; f, ok = c.queue.Pop() {
		transport.Release(f)
	}
	c.queue = fifo.Queue[transport.Frame]{} // a closed comm is remembered: keep it small
	c.end(err)
}

// end records err as the end of both directions, unless one is recorded.
// Called with m.mu held.
func (c *vconn) end(err error) {
	if c.sendErr == nil {
		c.sendErr = err
	}
	if c.recvErr == nil {
		c.recvErr = err
	}
}

// kick delivers what c has if it is started and nobody else is delivering.
// Called with m.mu held; releases it.
func (c *vconn) kick() {
	if c.handler == nil || c.delivering {
		c.m.mu.Unlock()
		return
	}
	c.drain()
}

// drain makes the caller the deliverer until nothing is left to deliver.
// Called with m.mu held and c idle; releases m.mu.
func (c *vconn) drain() {
	m := c.m
	c.delivering = true
	h := c.handler
	for {
		if f, ok := c.queue.Pop(); ok { // the payload goes with the handler
			m.mu.Unlock()
			h.HandleFrame(f)
			m.mu.Lock()
			continue
		}
		if c.recvErr != nil && !c.reported {
			c.reported = true
			err := c.recvErr
			m.mu.Unlock()
			h.HandleError(err)
			m.mu.Lock()
			continue
		}
		c.delivering = false
		m.mu.Unlock()
		return
	}
}
