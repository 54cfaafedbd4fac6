package lazy

import (
	"sync"

	"github.com/gocomms/gocomms/transport"
)

// inbox hands the frames a Conn receives, then its one error, to the
// handler: in order, one call at a time, and never under a lock, so that
// the handler may Send or Close from inside a call. Whoever finds it
// started and idle delivers until nothing is left, usually the underlying
// connection's own delivery, directly; everyone else only queues.
//
// Frames come from one underlying connection at a time, whose handler
// calls are sequential, so queueing them keeps their order. Errors come
// from anywhere; one recorded ends the inbox: later frames are dropped.
//
// Invariant: a started inbox that nobody is delivering has nothing left.
type inbox struct {
	mu         sync.Mutex
	handler    transport.Handler
	delivering bool
	queue      []transport.Frame
	head       int // queue[head:] awaits delivery

	err      error // the Conn's end, delivered after the queue
	reported bool  // err has been handed to the handler
}

func (b *inbox) push(f transport.Frame) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		transport.PutBuffer(f.Payload)
		return
	}
	b.queue = append(b.queue, f)
	b.kick()
}

func (b *inbox) start(h transport.Handler) {
	if h == nil {
		return
	}
	b.mu.Lock()
	if b.handler != nil {
		b.mu.Unlock()
		return
	}
	b.handler = h
	b.kick()
}

// fail ends the inbox with err, unless it has ended: the handler gets err
// after the frames queued so far.
func (b *inbox) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.kick()
}

// closeLocal ends the inbox for a local Close: frames not yet delivered are
// dropped, and the handler gets err unless it has another error coming.
func (b *inbox) closeLocal(err error) {
	b.mu.Lock()
	for _, f := range b.queue[b.head:] {
		transport.PutBuffer(f.Payload)
	}
	b.resetQueue()
	if b.err == nil {
		b.err = err
	}
	b.kick()
}

// kick delivers what is left if the inbox is started and idle. Called with
// b.mu held; releases it.
func (b *inbox) kick() {
	if b.handler == nil || b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	h := b.handler
	for {
		if b.head < len(b.queue) {
			f := b.queue[b.head]
			b.queue[b.head] = transport.Frame{} // the payload is the handler's now
			b.head++
			if b.head == len(b.queue) {
				b.resetQueue()
			}
			b.mu.Unlock()
			h.HandleFrame(f)
			b.mu.Lock()
			continue
		}
		if b.err != nil && !b.reported {
			b.reported = true
			err := b.err
			b.mu.Unlock()
			h.HandleError(err)
			b.mu.Lock()
			continue
		}
		b.delivering = false
		b.mu.Unlock()
		return
	}
}

func (b *inbox) resetQueue() {
	clear(b.queue[b.head:])
	b.queue = b.queue[:0]
	b.head = 0
}
