package transport

import (
	"sync"

	"github.com/gocomms/gocomms/internal/fifo"
)

// Inbox hands a connection's received frames, then its one error, to the
// handler, as the Conn contract requires: in order, one call at a time,
// and never under a lock, so that a handler may Send or Close from inside
// a call. Whoever finds it started and idle becomes the deliverer and
// delivers until nothing is left: normally the goroutine that received
// the frame, directly; Start or Close when they find frames or the error
// waiting. Connections embed one; the zero value is ready to use.
//
// Invariant: a started Inbox that nobody is delivering has an empty queue.
type Inbox struct {
	mu         sync.Mutex
	handler    Handler
	delivering bool
	queue      fifo.Queue[Frame]
	queued     int           // bytes waiting in queue, by QueuedCost
	room       chan struct{} // from WaitRoom: closed once queued <= roomAt
	roomAt     int

	err        error  // the connection's end, delivered after the queue
	reported   bool   // err has been handed to the handler
	shut       bool   // closed locally: drop frames
	afterClose func() // from closeLocal, run once no handler call is in progress
}

// QueuedCost is what a waiting frame counts in an inbox's backlog: its
// payload and this much more, so that empty frames count too.
const QueuedCost = 64

func queuedCost(f Frame) int { return len(f.Payload) + QueuedCost }

// Push delivers or queues a received frame, whose payload the handler
// will own; after CloseLocal it drops it.
func (b *Inbox) Push(f Frame) {
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		Release(f)
		return
	}
	if b.handler == nil {
		f = Detach(f) // it may wait long for Start
	}
	if b.handler == nil || b.delivering {
		b.queue.Push(f)
		b.queued += queuedCost(f)
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

// WaitRoom waits until at most limit bytes (by QueuedCost) wait in the
// inbox, or until abort is closed. A receiver that calls it after each
// Push stops taking frames in while its handler is behind or not yet
// started, so that a slow receiver slows its sender instead of queueing
// without bound. One goroutine at a time may wait. waiting, if not nil,
// is called when the wait begins, for a test that waits for the bound to
// hold the receiver.
func (b *Inbox) WaitRoom(limit int, abort <-chan struct{}, waiting func()) {
	b.mu.Lock()
	if b.queued <= limit {
		b.mu.Unlock()
		return
	}
	room := make(chan struct{})
	b.room, b.roomAt = room, limit
	b.mu.Unlock()
	if waiting != nil {
		waiting()
	}
	select {
	case <-room:
	case <-abort:
		b.mu.Lock()
		if b.room == room {
			b.room = nil
		}
		b.mu.Unlock()
	}
}

// Queued is the bytes, by QueuedCost, of the frames waiting for the
// handler.
func (b *Inbox) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued
}

// signalRoom wakes WaitRoom once the backlog is within its limit. Called
// with b.mu held.
func (b *Inbox) signalRoom() {
	if b.room != nil && b.queued <= b.roomAt {
		close(b.room)
		b.room = nil
	}
}

// Start sets the handler, once, and delivers what is waiting.
func (b *Inbox) Start(h Handler) {
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

// Fail records how the connection ended, unless that is already known; the
// handler gets it after the frames queued before it.
func (b *Inbox) Fail(err error) {
	b.mu.Lock()
	b.finish(err)
}

// CloseLocal drops undelivered frames and any that arrive later; the
// handler gets err next, unless it has its error already. Then, once no
// handler call is in progress, it runs then: at once, or when the call in
// progress (perhaps the one calling Close) returns.
func (b *Inbox) CloseLocal(err error, then func()) {
	b.mu.Lock()
	b.shut = true
	for f, ok := b.queue.Pop(); ok; f, ok = b.queue.Pop() {
		Release(f)
	}
	b.queued = 0
	b.signalRoom()
	b.afterClose = then
	b.finish(err)
}

// finish records err unless an error is recorded, and delivers it if
// nobody else is about to. Called with b.mu held; releases it.
func (b *Inbox) finish(err error) {
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
func (b *Inbox) drain() {
	b.delivering = true
	h := b.handler
	for {
		if f, ok := b.queue.Pop(); ok { // the payload is the handler's now
			b.queued -= queuedCost(f)
			b.signalRoom()
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
func (b *Inbox) idle() {
	then := b.afterClose
	b.afterClose = nil
	b.mu.Unlock()
	if then != nil {
		then()
	}
}
