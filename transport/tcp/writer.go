package tcp

import (
	"hash/crc32"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// maxFramesPerWrite bounds one vectored write to Linux's IOV_MAX of 1024
// iovecs: a header and a payload per frame.
const maxFramesPerWrite = 512

// outFrame is a frame encoded for the wire but for its payload, which is
// written from where the sender left it.
type outFrame struct {
	hdr     [headerLen]byte
	payload []byte
	sent    func() // set when payload is borrowed
	skip    int    // bytes of hdr and payload written already
}

// parts appends to iov what is left to write of o.
func (o *outFrame) parts(iov [][]byte) [][]byte {
	if o.skip < headerLen {
		iov = append(iov, o.hdr[o.skip:])
	}
	if p := o.payload[max(o.skip-headerLen, 0):]; len(p) > 0 {
		iov = append(iov, p)
	}
	return iov
}

// size is the frame's length on the wire.
func (o *outFrame) size() int { return headerLen + len(o.payload) }

// writer owns a connection's write side. Send encodes the header and
// checksums the payload in the caller's goroutine, where the payload was
// usually just written and is in cache. If nothing is being written or
// waits, it writes the frame there and then, as far as the socket takes
// it without blocking: a collective's caller sends its frame with no
// goroutine's wake-up. Otherwise, and for what the socket did not take,
// it appends to the queue, so it never waits for the network or the
// peer. One goroutine takes everything queued and writes it with
// vectored writes, headers and payloads side by side without copying,
// then gives each payload back: to the pool, or to its lender.
type writer struct {
	sock  *net.TCPConn
	raw   syscall.RawConn
	check bool // checksum payloads (see Checksums)

	mu      sync.Mutex
	wake    sync.Cond // signalled when the queue fills or closing or abort is set
	queue   []outFrame
	err     error // non-nil once Sends must fail
	closing bool  // closed locally: write what is queued, then send FIN
	abort   bool  // failed: drop what is queued and stop
	// busy says a goroutine writes: run, or a Send writing in place. It
	// owns batch meanwhile.
	busy bool

	done chan struct{} // closed when run returns

	// Owned by the goroutine in run.
	batch []outFrame
	iov   net.Buffers // the write being built
	out   net.Buffers // what is left of it to write; a field, so as not to escape

	// A Send's write in place: its argument and results, as fields so
	// that the write function, made once, allocates nothing.
	inline    [][]byte
	wrote     int
	writeErr  error
	writeOnce func(fd uintptr) bool
}

func newWriter(sock *net.TCPConn, check bool) *writer {
	w := &writer{sock: sock, check: check, done: make(chan struct{})}
	w.wake.L = &w.mu
	w.raw, _ = sock.SyscallConn() // cannot fail on a connected socket
	w.writeOnce = w.tryWrite
	return w
}

// send queues f, or returns the error that ended the connection.
func (w *writer) send(f transport.Frame) error {
	var sum uint32
	if w.check {
		sum = crc32.Checksum(f.Payload, castagnoli) // before the lock: it takes time
	}
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		transport.Release(f)
		return err
	}
	// Encoded in place: a header built on the stack would escape, through
	// the checksum, into an allocation per frame.
	w.queue = append(w.queue, outFrame{payload: f.Payload, sent: f.Sent})
	putHeader(w.queue[len(w.queue)-1].hdr[:], f.Header, len(f.Payload), sum, w.check)
	if len(w.queue) > 1 || w.busy || w.closing || w.abort {
		if len(w.queue) == 1 {
			w.wake.Signal() // run waits only for an empty queue to fill
		}
		w.mu.Unlock()
		return nil
	}
	// Nothing else is written or waits: write it here.
	w.busy = true
	w.batch, w.queue = w.queue, w.batch[:0]
	w.mu.Unlock()
	o := &w.batch[0]
	w.inline = o.parts(w.inline[:0])
	if w.raw.Write(w.writeOnce) == nil && w.writeErr == nil {
		o.skip += w.wrote
	}
	clear(w.inline)
	written := o.skip == o.size()
	if written {
		release(w.batch) // while busy: batch is this goroutine's
	}
	w.mu.Lock()
	if !written {
		// The rest goes first, from run: it waits for room, and meets
		// any error the socket has.
		w.queue = slices.Insert(w.queue, 0, *o)
		clear(w.batch)
	}
	w.batch = w.batch[:0]
	w.busy = false
	if len(w.queue) > 0 || w.closing || w.abort {
		w.wake.Signal() // run waits for an idle writer
	}
	w.mu.Unlock()
	return nil
}

// tryWrite is the write in place, one system call that does not block.
func (w *writer) tryWrite(fd uintptr) bool {
	for {
		w.wrote, w.writeErr = unix.Writev(int(fd), w.inline)
		if w.writeErr != unix.EINTR {
			break
		}
	}
	w.wrote = max(w.wrote, 0)
	return true
}

// stop makes Sends fail with err, unless an error is already recorded.
// What is queued is still written.
func (w *writer) stop(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// finish has run send FIN once the queue is written, and bounds the
// writing left by timeout. Call it after stop.
func (w *writer) finish(timeout time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closing {
		w.closing = true
		w.sock.SetWriteDeadline(time.Now().Add(timeout))
		w.wake.Signal()
	}
}

// fail makes Sends fail with err, unless an error is already recorded, and
// stops run, cutting short a write in progress. It returns the error
// recorded first, which is the one that ended the connection.
func (w *writer) fail(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	if !w.abort {
		w.abort = true
		w.sock.SetWriteDeadline(aLongTimeAgo)
		w.wake.Signal()
	}
	return w.err
}

// run writes queued frames until the connection is closed or fails. A
// write error fails the connection through onError.
func (w *writer) run(onError func(error)) {
	defer close(w.done)
	for {
		w.mu.Lock()
		for (len(w.queue) == 0 && !w.closing || w.busy) && !w.abort {
			w.wake.Wait()
		}
		if w.abort {
			dropped := w.queue
			w.queue = nil
			w.mu.Unlock()
			release(dropped)
			return
		}
		if len(w.queue) == 0 { // flushed after Close
			w.mu.Unlock()
			w.sock.CloseWrite()
			return
		}
		w.batch, w.queue = w.queue, w.batch[:0]
		w.busy = true
		w.mu.Unlock()

		err := w.write(w.batch)
		release(w.batch)
		w.mu.Lock()
		w.busy = false
		w.mu.Unlock()
		if err != nil {
			onError(err)
		}
	}
}

// write sends frames with as few vectored writes as IOV_MAX allows.
func (w *writer) write(frames []outFrame) error {
	for len(frames) > 0 {
		n := min(len(frames), maxFramesPerWrite)
		for i := range frames[:n] {
			w.iov = frames[i].parts(w.iov)
		}
		w.out = w.iov
		_, err := w.out.WriteTo(w.sock)
		clear(w.iov) // drop references to payloads that go back to the pool
		w.iov = w.iov[:0]
		if err != nil {
			return err
		}
		frames = frames[n:]
	}
	return nil
}

// release gives back written or dropped payloads, to the pool or to their
// lenders, and clears frames for reuse.
func release(frames []outFrame) {
	for i := range frames {
		transport.Release(transport.Frame{Payload: frames[i].payload, Sent: frames[i].sent})
	}
	clear(frames)
}

// aLongTimeAgo is a deadline that has passed: setting it interrupts a
// blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)
