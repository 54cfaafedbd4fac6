package transport

import (
	"fmt"
	"sync"
)

// inprocConn is one end of an in-process connection: it sends into out and
// receives from in; its peer holds the same two pipes the other way round.
type inprocConn struct {
	local, remote string
	out, in       *pipe
}

var _ Conn = (*inprocConn)(nil)

func newInprocPair(dialerAddr, listenerAddr string) (dialer, acceptor *inprocConn) {
	up, down := new(pipe), new(pipe) // up: dialer to acceptor
	dialer = &inprocConn{local: dialerAddr, remote: listenerAddr, out: up, in: down}
	acceptor = &inprocConn{local: listenerAddr, remote: dialerAddr, out: down, in: up}
	return dialer, acceptor
}

// Lossless makes the pipes a transport.Lossless connection: they drop
// nothing until they close.
func (c *inprocConn) Lossless() bool { return true }

func (c *inprocConn) LocalAddr() string  { return c.local }
func (c *inprocConn) RemoteAddr() string { return c.remote }

func (c *inprocConn) Send(f Frame) error {
	if f.Sent != nil {
		// The receiver owns what it is handed: lend nothing across.
		owned := GetBuffer(len(f.Payload))
		copy(owned, f.Payload)
		f.Sent()
		f.Payload, f.Sent = owned, nil
	}
	return c.out.send(f)
}

func (c *inprocConn) Start(h Handler) { c.in.start(h) }

// Close shuts both directions. The two pipes are closed one after the other,
// never under one lock, and either may call a handler on the way. Each end
// is told in its own terms: our Sends and handler get ours, the peer's
// Sends and handler get theirs.
func (c *inprocConn) Close() error {
	ours := fmt.Errorf("transport: inproc conn %s->%s closed locally: %w", c.local, c.remote, ErrClosed)
	theirs := fmt.Errorf("transport: inproc conn %s->%s closed by peer: %w", c.remote, c.local, ErrClosed)
	c.out.closeSender(ours, theirs)
	c.in.closeReceiver(theirs, ours)
	return nil
}

// pipe carries frames one way. Whoever finds it idle with a handler set
// becomes its deliverer and calls the handler, with the lock released, until
// the queue is empty; everyone else only appends. This gives the sender's
// goroutine synchronous delivery in the common case, one handler call at a
// time, FIFO order across concurrent Sends and Start, and no deadlock when a
// handler sends on the reverse pipe: no lock is held across a handler call,
// and a Send into a pipe that is already being delivered only queues.
//
// Invariant: a started pipe that nobody is delivering has an empty queue.
type pipe struct {
	mu         sync.Mutex
	handler    Handler
	delivering bool // a goroutine is inside drain
	queue      []Frame
	head       int // queue[head:] awaits delivery

	sendErr  error // non-nil once closed: returned to later Sends
	recvErr  error // to deliver after the queue, once
	reported bool  // recvErr has been handed to the handler
	recvShut bool  // the receiving end closed: drop frames
}

func (p *pipe) send(f Frame) error {
	p.mu.Lock()
	if p.sendErr != nil {
		err := p.sendErr
		p.mu.Unlock()
		PutBuffer(f.Payload)
		return err
	}
	if p.handler == nil || p.delivering {
		p.queue = append(p.queue, f)
		p.mu.Unlock()
		return nil
	}
	// Started and idle, hence the queue is empty: deliver f directly.
	p.delivering = true
	h := p.handler
	p.mu.Unlock()
	h.HandleFrame(f)
	p.mu.Lock()
	p.drain()
	return nil
}

func (p *pipe) start(h Handler) {
	if h == nil {
		return
	}
	p.mu.Lock()
	if p.handler != nil {
		p.mu.Unlock()
		return
	}
	p.handler = h // nobody delivers without a handler, so the pipe is idle
	p.drain()
}

// closeSender ends the pipe from the sending side: queued frames are still
// delivered, then recvErr.
func (p *pipe) closeSender(sendErr, recvErr error) {
	p.mu.Lock()
	if p.sendErr == nil {
		p.sendErr = sendErr
	}
	p.finish(recvErr)
}

// closeReceiver ends the pipe from the receiving side: queued frames are
// dropped, and the receiver's handler gets recvErr next.
func (p *pipe) closeReceiver(sendErr, recvErr error) {
	p.mu.Lock()
	if p.sendErr == nil {
		p.sendErr = sendErr
	}
	if !p.recvShut {
		p.recvShut = true
		for i := p.head; i < len(p.queue); i++ {
			PutBuffer(p.queue[i].Payload)
		}
		p.resetQueue()
	}
	p.finish(recvErr)
}

// finish records recvErr unless an error is already recorded, and delivers
// it if nobody else is about to. Called with p.mu held; releases it.
func (p *pipe) finish(recvErr error) {
	if p.recvErr == nil {
		p.recvErr = recvErr
	}
	if p.handler == nil || p.delivering {
		p.mu.Unlock()
		return
	}
	p.drain()
}

// drain makes the caller the deliverer until nothing is left to deliver.
// Called with p.mu held and the pipe idle or already owned by the caller;
// releases p.mu.
func (p *pipe) drain() {
	p.delivering = true
	h := p.handler
	for {
		if p.head < len(p.queue) {
			f := p.queue[p.head]
			p.queue[p.head] = Frame{} // let the payload go with the handler
			p.head++
			if p.head == len(p.queue) {
				p.resetQueue()
			}
			p.mu.Unlock()
			h.HandleFrame(f)
			p.mu.Lock()
			continue
		}
		if p.recvErr != nil && !p.reported {
			p.reported = true
			err := p.recvErr
			p.mu.Unlock()
			h.HandleError(err)
			p.mu.Lock()
			continue
		}
		p.delivering = false
		p.mu.Unlock()
		return
	}
}

func (p *pipe) resetQueue() {
	clear(p.queue[p.head:])
	p.queue = p.queue[:0]
	p.head = 0
}
