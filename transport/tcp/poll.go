package tcp

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// A connection's received frames are read by its reader goroutine, or
// by a goroutine that waits for them and polls (transport.Poller): a
// caller waiting on a collective reads the socket itself, without
// blocking, as Open MPI's TCP transport polls, so that what it waits for
// needs neither the reader's wake-up nor its own. Whoever holds rxMu
// reads. While a goroutine polls, the reader goroutine reads nothing:
// one blocked in a read is woken (kicked: its read deadline set in the
// past), and waits until the pollers are gone and a little longer
// (pollLinger) before it reads again.
var _ transport.Poller = (*conn)(nil)

// pollLinger is how long after the last poller paused the reader
// goroutine still leaves the reading to pollers: a loop of blocking
// collectives polls again within it, and its frames then need no
// goroutine's wake-up. What arrives meanwhile waits for the next poller
// or for the linger's end.
const pollLinger = 200 * time.Microsecond

// errWouldBlock is a non-blocking read's: nothing has arrived.
var errWouldBlock = errors.New("transport/tcp: no data yet")

// poller is a connection's state for the goroutines that poll it.
type poller struct {
	raw     syscall.RawConn
	pollers atomic.Int32
	lingers atomic.Bool   // a poller paused, and none stopped since
	pauses  atomic.Uint64 // pauses so far, which keep the reader lingering
	wake    chan struct{} // the reader goroutine waits on it for the pollers to go
	closed  atomic.Bool   // Close came: the reader goroutine reads to the end
	reading atomic.Bool   // the reader goroutine holds rxMu, and may block in a read
	kicked  atomic.Bool   // the read deadline is in the past, to end a blocked read
	// deadline is the read deadline when not kicked: zero, or the close
	// timeout's.
	deadline atomic.Pointer[time.Time]

	rxMu    sync.Mutex
	polling bool  // the holder of rxMu reads without blocking
	pollErr error // how a poller's read ended the connection, for the reader goroutine
	served  bool  // the reader goroutine has ended: nothing is read any more

	// A non-blocking read's argument and results, as fields so that the
	// read function, made once, allocates nothing.
	buf      []byte
	n        int
	err      error
	readOnce func(fd uintptr) bool
}

// source is what the frameReader reads: the socket, blocking on the
// reader goroutine, without blocking for a poller.
type source struct{ c *conn }

func (s source) Read(p []byte) (int, error) {
	c := s.c
	if !c.polling {
		return c.sock.Read(p)
	}
	c.buf = p
	if err := c.raw.Read(c.readOnce); err != nil {
		return 0, err
	}
	c.buf = nil
	switch {
	case c.err == unix.EAGAIN:
		return 0, errWouldBlock
	case c.err != nil:
		return 0, c.err
	case c.n == 0:
		return 0, io.EOF
	}
	return c.n, nil
}

// tryRead is the non-blocking read, one system call.
func (p *poller) tryRead(fd uintptr) bool {
	for {
		p.n, p.err = unix.Read(int(fd), p.buf)
		if p.err != unix.EINTR {
			break
		}
	}
	if p.n < 0 {
		p.n = 0
	}
	return true
}

// again reports whether a read error leaves the frame read so far to go
// on with: nothing to read without blocking, or a blocked read ended by
// a kick.
func (c *conn) again(err error) bool {
	return errors.Is(err, errWouldBlock) || c.kicked.Load() && errors.Is(err, os.ErrDeadlineExceeded)
}

// PolledBySyscall says each poll is a read system call
// (transport.PolledBySyscall).
func (c *conn) PolledBySyscall() bool { return true }

// Polling says a goroutine starts polling (on) or stops.
func (c *conn) Polling(on bool) {
	if on {
		c.pollers.Add(1)
		return
	}
	c.lingers.Store(false)
	if c.pollers.Add(-1) == 0 {
		c.wakeReader()
	}
}

// Paused stops the caller's polling for now: the reader goroutine leaves
// the reading to pollers for pollLinger more.
func (c *conn) Paused() {
	c.pauses.Add(1)
	c.lingers.Store(true)
	if c.pollers.Add(-1) == 0 {
		c.wakeReader()
	}
}

func (c *conn) wakeReader() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Poll delivers to the handler, on the calling goroutine, the frames
// that have arrived, and reports whether it took any: none while the
// reader goroutine reads, which it is asked to stop.
func (c *conn) Poll() bool {
	if !c.rxMu.TryLock() {
		c.kick()
		return false
	}
	if c.served || c.pollErr != nil {
		c.rxMu.Unlock()
		return false
	}
	c.unkick()
	c.polling = true
	moved := false
	for {
		f, err := c.fr.next()
		if err != nil {
			if !errors.Is(err, errWouldBlock) {
				c.pollErr = err // the reader goroutine ends the connection with it
			}
			break
		}
		moved = true
		c.in.Push(f) // under rxMu: frames reach the inbox in order
	}
	c.polling = false
	failed := c.pollErr != nil
	c.rxMu.Unlock()
	if failed {
		c.wakeReader()
	}
	return moved
}

// kick ends the reader goroutine's read, which may block, so that a
// poller may read.
func (c *conn) kick() {
	if c.reading.Load() && c.kicked.CompareAndSwap(false, true) {
		c.sock.SetReadDeadline(aLongTimeAgo)
	}
}

// unkick sets the read deadline back once a kick has ended the read.
// Called with rxMu held, by whoever reads next.
func (c *conn) unkick() {
	if c.kicked.Load() {
		c.sock.SetReadDeadline(*c.deadline.Load())
		c.kicked.Store(false)
	}
}

// setDeadline sets the socket's read deadline, which a kick's end goes
// back to.
func (c *conn) setDeadline(t time.Time) {
	c.deadline.Store(&t)
	c.sock.SetReadDeadline(t)
}

// awaitPollers waits, on the reader goroutine, while goroutines poll, and
// for pollLinger after the last paused, until none has paused meanwhile.
// It returns at once once a poller's read ended the connection, or the
// connection closes.
func (c *conn) awaitPollers(timer *time.Timer) {
	for {
		if c.failedPolling() {
			return
		}
		if c.closed.Load() {
			return
		}
		if c.pollers.Load() > 0 {
			<-c.wake
			continue
		}
		if !c.lingers.Load() {
			return
		}
		pauses := c.pauses.Load()
		timer.Reset(pollLinger)
		select {
		case <-timer.C:
		case <-c.wake:
			timer.Stop()
		}
		if c.pauses.Load() == pauses && c.pollers.Load() == 0 {
			c.lingers.Store(false)
		}
	}
}

func (c *conn) failedPolling() bool {
	c.rxMu.Lock()
	defer c.rxMu.Unlock()
	return c.pollErr != nil
}
