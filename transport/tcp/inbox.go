package tcp

import (
	"sync"

	"github.com/gocomms/gocomms/transport"
)

// inbox hands a connection's received frames, then its one error, to the
// handler: in order, one call at a time, and never under a lock, so that a
// handler may Send or Close from inside a call. Whoever finds it started
// and idle becomes the deliverer and delivers until nothing is left:
// normally the reader goroutine, directly; Start or Close when they find
// frames or the error waiting.
//
// Invariant: a started inbox that nobody is delivering has an empty queue.
type inbox struct {
	mu         sync.Mutex
	handler    transport.Handler
	delivering bool
	queue      []transport.Frame
	head       int // queue[head:] awaits delivery

	err        error  // the connection's end, delivered after the queue
	reported   bool   // err has been handed to the handler
	shut       bool   // closed locally: drop frames
	afterClose func() // from closeLocal, run once no handler call is in progress
}

// push delivers or queues a frame from the reader.
func (b *inbox) push(f transport.Frame) {
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		transport.PutBuffer(f.Payload)
		return
	}
	if b.handler == nil || b.delivering {
		b.queue = append(b.queue, f)
		b.mu.Unlock()
		return
	}
	// Started and idle, hence nothing queued: deliver f directly.
	b.delivering = true
	h := b.handler
	b.mu.Unlock()
	h.HandleFrame(f)
	b.mu.Lock()
	b.drain()
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
	b.drain()
}

// fail records how the connection ended, unless that is already known; the
// handler gets it after the frames queued before it.
func (b *inbox) fail(err error) {
	b.mu.Lock()
	b.finish(err)
}

// closeLocal drops undelivered frames and any that arrive later; the
// handler gets err next, unless it has its error already. Then, once no
// handler call is in progress, it runs then: at once, or when the call in
// progress (perhaps the one calling Close) returns.
func (b *inbox) closeLocal(err error, then func()) {
	b.mu.Lock()
	b.shut = true
	for i := b.head; i < len(b.queue); i++ {
		transport.PutBuffer(b.queue[i].Payload)
	}
	b.resetQueue()
	b.afterClose = then
	b.finish(err)
}

// finish records err unless an error is recorded, and delivers it if
// nobody else is about to. Called with b.mu held; releases it.
func (b *inbox) finish(err error) {
	if b.err == nil {
		b.err = err
	}
	switch {
	case b.delivering: // the deliverer takes it from here
		b.mu.Unlock()
	case b.handler == nil:
		b.idle()
	default:
		b.drain()
	}
}

// drain makes the caller the deliverer until nothing is left to deliver.
// Called with b.mu held and the inbox idle or owned by the caller; releases
// b.mu.
func (b *inbox) drain() {
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
		b.idle()
		return
	}
}

// idle runs afterClose, if set, now that no handler call is in progress.
// Called with b.mu held; releases it.
func (b *inbox) idle() {
	then := b.afterClose
	b.afterClose = nil
	b.mu.Unlock()
	if then != nil {
		then()
	}
}

func (b *inbox) resetQueue() {
	clear(b.queue[b.head:])
	b.queue = b.queue[:0]
	b.head = 0
}
