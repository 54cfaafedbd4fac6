package lazy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// KindWelcome marks the answer an acceptor sends first on a connection it
// was dialled: Comm is the group id, Tag says which answer, and there is no
// payload. The value lies outside the engine's kinds (1 to 4; 0x81 to 0x84 flagged) and the
// mux's close marker (255).
const KindWelcome transport.Kind = 254

// The answers, by Tag.
const (
	tagWelcome uint32 = 0 // accepted: this connection carries the pair's frames
	tagGone    uint32 = 1 // refused for good: the acceptor's conn to the dialer has ended
	tagCrossed uint32 = 2 // refused: the acceptor's own dial, which wins, is on its way
)

// link is the handler of one underlying connection of a conn: the one we
// dialled, or one a peer dialled to us.
type link struct {
	c *conn
	u transport.Conn
	// awaiting is set on a dialled connection until its first frame, the
	// answer. Only u's handler calls touch it, and they come one at a time.
	awaiting bool
}

func (l *link) HandleFrame(f transport.Frame) {
	if l.awaiting {
		l.awaiting = false
		l.c.answered(l, f)
		return
	}
	l.c.received(l, f)
}

func (l *link) HandleError(err error) { l.c.lost(l, err) }

// dial is the dial goroutine: it dials the peer and starts the connection,
// whose first frame will be the peer's answer.
func (c *conn) dial(ctx context.Context, cancel context.CancelFunc) {
	var u transport.Conn
	addr, err := c.g.address(ctx, c.peer)
	if err != nil {
		err = fmt.Errorf("resolve its address: %w", err)
	} else {
		u, err = c.g.net.Dial(ctx, addr, c.g.hello(c.gen))
	}
	cancel() // the connection outlives the dial's context
	c.mu.Lock()
	if c.st != dialing {
		// We took the peer's connection meanwhile, which makes it refuse
		// ours, or c has ended.
		c.mu.Unlock()
		if err == nil {
			u.Close()
		}
		return
	}
	if err != nil {
		c.failLocked(transport.Closed(fmt.Errorf("transport/lazy: dial %s: %w", c.describe(), err)))
		return
	}
	l := &link{c: c, u: u, awaiting: true}
	c.dialLink = l
	c.mu.Unlock()
	u.Start(l)
}

// answered handles the first frame of the connection we dialled.
func (c *conn) answered(l *link, f transport.Frame) {
	empty := len(f.Payload) == 0
	transport.Release(f)
	c.mu.Lock()
	if c.st != dialing || c.dialLink != l {
		c.mu.Unlock()
		l.u.Close() // given up on already; closing again is harmless
		return
	}
	switch {
	case empty && c.g.isAnswer(f.Header, tagWelcome):
		c.dialLink = nil
		c.peerGen = uint32(f.Header.Seq)
		settled := c.chooseLocked(l)
		c.mu.Unlock()
		if settled {
			c.g.settled()
		}
		c.connected()
		c.flush(l)
		return
	case empty && c.g.isAnswer(f.Header, tagCrossed) && c.peer < c.g.self:
		// The peer's dial reached it while its own was in flight. Its
		// own wins, and the peer closes this one.
		c.dialLink = nil
		c.st = waiting
		c.timer.Stop()
		c.timer = time.AfterFunc(c.g.timeout, func() { c.expire(waiting) })
		c.mu.Unlock()
		l.u.Close()
		return
	case empty && c.g.isAnswer(f.Header, tagGone):
		c.failLocked(fmt.Errorf("transport/lazy: %s refused our connection: its conn to us has ended: %w: %w",
			c.describe(), transport.ErrRefused, transport.ErrClosed))
	default:
		c.failLocked(fmt.Errorf("transport/lazy: %s answered our connection with a %v frame (comm %#x, tag %d), not a welcome: %w: %w",
			c.describe(), f.Header.Kind, f.Header.Comm, f.Header.Tag, ErrProtocol, transport.ErrClosed))
	}
}

// incoming handles a connection the peer's Conn of generation gen
// dialled, in the accept goroutine. The lower index's dial wins a race of
// dials; see the package documentation for why that settles every race on
// one connection.
func (c *conn) incoming(u transport.Conn, gen uint32) {
	c.mu.Lock()
	var drop *link
	switch {
	case c.st == idle, c.st == waiting:
	case c.st == dialing && c.g.self > c.peer:
		// Ours loses: the peer, dialling too, refuses it.
		drop, c.dialLink = c.dialLink, nil
		c.cancel()
	case c.st == dialing:
		// Ours wins: the peer, dialling too, accepts it and waits for it.
		c.mu.Unlock()
		c.g.refuse(u, tagCrossed)
		return
	case c.st == ended:
		c.mu.Unlock()
		c.g.refuse(u, tagGone)
		return
	default:
		// Connected already, to this generation of the peer's Conn: a dial
		// it dropped for ours, arriving late.
		c.mu.Unlock()
		u.Close()
		return
	}
	l := &link{c: c, u: u}
	c.peerGen = gen
	settled := c.chooseLocked(l)
	c.mu.Unlock()
	if settled {
		c.g.settled()
	}
	if drop != nil {
		drop.u.Close()
	}
	u.Start(l)
	// The welcome goes before anything else on u.
	if err := u.Send(transport.Frame{Header: c.g.answer(tagWelcome, c.gen)}); err != nil {
		c.sendFailed(l, err)
		return
	}
	c.connected()
	c.flush(l)
}

// chooseLocked makes l the connection; the caller flushes it next. It
// reports whether c leaves g.pending. Called with mu held.
func (c *conn) chooseLocked(l *link) bool {
	c.st = flushing
	c.cur = l
	c.chosen.Store(l)
	if c.timer != nil { // none when the peer dialled first
		c.timer.Stop()
	}
	return c.unpendLocked()
}

func (c *conn) connected() {
	if f := c.g.onConnect; f != nil {
		f(c.peer)
	}
}

// flush sends the queue on l's connection, in order, until it stays empty,
// and then lets Sends go straight to it; or closes it, if c was closed
// meanwhile. A Send made during the flush joins the queue, so it leaves
// after the frames queued before it.
func (c *conn) flush(l *link) {
	for {
		c.mu.Lock()
		if c.st != flushing || c.cur != l {
			c.mu.Unlock() // ended meanwhile; the queue went with it
			return
		}
		q := c.queue
		c.queue = nil
		if len(q) == 0 {
			if !c.closed {
				c.st = up
				c.mu.Unlock()
				return
			}
			t := c.endLocked(c.err, true)
			c.mu.Unlock()
			t.run(c)
			return
		}
		c.mu.Unlock()
		for i, f := range q {
			if err := l.u.Send(f); err != nil {
				for _, rest := range q[i+1:] {
					transport.Release(rest)
				}
				c.sendFailed(l, err)
				return
			}
		}
	}
}

// received delivers a frame of the chosen connection; frames of any other
// are dropped.
func (c *conn) received(l *link, f transport.Frame) {
	c.mu.Lock()
	ours := c.cur == l
	c.mu.Unlock()
	if !ours {
		transport.Release(f)
		return
	}
	c.in.Push(f)
}

// sendFailed handles a Send that failed on l's connection while flushing.
// A connection that has ended reports it to l after the frames it still
// delivers, and lost tells the handler then; until then c's Sends fail.
// Any other failure, a frame the connection refuses, ends c and the
// connection here, since the frame's sender cannot be told.
func (c *conn) sendFailed(l *link, err error) {
	gone := errors.Is(err, transport.ErrClosed)
	err = transport.Closed(fmt.Errorf("transport/lazy: send to %s: %w", c.describe(), err))
	c.mu.Lock()
	if c.cur != l || c.st == ended {
		c.mu.Unlock()
		return
	}
	if !gone {
		t := c.endLocked(err, true)
		c.mu.Unlock()
		t.run(c)
		c.in.Fail(err)
		return
	}
	t := c.endLocked(err, false)
	c.mu.Unlock()
	t.run(c)
}

// lost handles the end of one of c's connections.
func (c *conn) lost(l *link, err error) {
	c.mu.Lock()
	switch {
	case c.st == dialing && c.dialLink == l:
		// It ended without an answer: the peer's listener closed with it
		// in the backlog, or the peer is not a member of this group.
		c.failLocked(transport.Closed(fmt.Errorf("transport/lazy: %s hung up without answering our connection: %w: %w",
			c.describe(), err, transport.ErrRefused)))
	case c.cur == l:
		// Every frame it delivered is in the inbox: the handler hears of
		// the end after them, unless c was closed here first.
		err = transport.Closed(fmt.Errorf("transport/lazy: connection with %s: %w", c.describe(), err))
		var t teardown
		if c.st != ended {
			t = c.endLocked(err, false)
		}
		c.mu.Unlock()
		t.run(c)
		c.in.Fail(err)
	default:
		c.mu.Unlock() // a connection we let go of
	}
}

// expire ends c if it is still in state s when the dial timeout for s runs
// out.
func (c *conn) expire(s state) {
	c.mu.Lock()
	if c.st != s {
		c.mu.Unlock()
		return
	}
	var err error
	if s == dialing {
		err = fmt.Errorf("transport/lazy: %s did not answer our connection within %v: %w",
			c.describe(), c.g.timeout, transport.ErrClosed)
	} else {
		err = fmt.Errorf("transport/lazy: %s refused our connection for its own and did not connect within %v: %w: %w",
			c.describe(), c.g.timeout, transport.ErrRefused, transport.ErrClosed)
	}
	c.failLocked(err)
}
