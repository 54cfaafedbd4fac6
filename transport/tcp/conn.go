package tcp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// readBufferSize is the reader's buffer: one read system call takes in
// many small frames, while payloads larger than it are read straight into
// their own buffers.
const readBufferSize = 64 << 10

// conn is one end of a TCP connection that has passed the preface. Two
// goroutines serve it: the writer's (writer.go) and the reader's (read),
// which decodes frames and delivers them through the inbox, unless a
// goroutine waiting for them polls (poll.go).
//
// Teardown: Close makes Sends fail and has the local handler told; the
// writer finishes the queue and sends FIN once no handler call is in
// progress. The reader goes on reading, and discarding, until the peer's
// FIN or the close timeout: closing a socket with unread bytes makes the
// kernel send a reset, which would destroy our last frames still in
// flight. Whichever way the connection ends, the reader stops the writer,
// waits for it and closes the socket.
type conn struct {
	sock          *net.TCPConn
	local, remote string
	maxPayload    int
	window        int // bytes of received frames that may wait for the handler
	closeTimeout  time.Duration

	w         *writer
	in        transport.Inbox
	fr        frameReader
	closeOnce sync.Once
	released  chan struct{} // closed once the socket is closed
	stopOnce  sync.Once
	stopRead  chan struct{} // closed on a write error: the reader waits for no room
	poller
}

var (
	_ transport.Conn    = (*conn)(nil)
	_ transport.Drainer = (*conn)(nil)
)

// receiverHeldBack, when set (by tests), hears of each reader that stops
// taking frames in until its handler makes room.
var receiverHeldBack atomic.Pointer[func()]

// heldBack tells receiverHeldBack, if set, that a reader waits for room.
func heldBack() {
	if heard := receiverHeldBack.Load(); heard != nil {
		(*heard)()
	}
}

// newConn starts serving sock, whose preface exchange is complete.
func newConn(sock *net.TCPConn, cfg *config) *conn {
	c := &conn{
		sock:         sock,
		local:        sock.LocalAddr().String(),
		remote:       sock.RemoteAddr().String(),
		maxPayload:   cfg.maxPayload,
		window:       cfg.receiveWindow,
		stopRead:     make(chan struct{}),
		closeTimeout: cfg.closeTimeout,
		w:            newWriter(sock, cfg.checkPayloads(sock.LocalAddr(), sock.RemoteAddr())),
		released:     make(chan struct{}),
	}
	c.fr = frameReader{r: bufio.NewReaderSize(source{c}, readBufferSize), max: uint32(cfg.maxPayload), again: c.again}
	c.raw, _ = sock.SyscallConn() // cannot fail on a connected socket
	c.readOnce = c.tryRead
	c.wake = make(chan struct{}, 1)
	c.deadline.Store(&time.Time{})
	go c.w.run(c.writeFailed)
	go c.read()
	return c
}

// BorrowsPayloads marks the connection as a transport.Borrower: the writer
// sends a lent payload from where it lies.
func (c *conn) BorrowsPayloads() {}

func (c *conn) LocalAddr() string  { return c.local }
func (c *conn) RemoteAddr() string { return c.remote }

func (c *conn) Send(f transport.Frame) error {
	if len(f.Payload) > c.maxPayload {
		transport.Release(f)
		return fmt.Errorf("transport/tcp: send to peer %s: payload of %d bytes exceeds the limit of %d: %w",
			c.remote, len(f.Payload), c.maxPayload, ErrTooLarge)
	}
	return c.w.send(f)
}

func (c *conn) Start(h transport.Handler) { c.in.Start(h) }

// Drained is closed once the socket is released: after Close, when every
// frame sent before it was written and the peer has closed its end, which
// it does on reading our FIN, after our last frame; or when the close
// timeout or a failure gave up on them. Exiting earlier could lose frames
// still in flight: a socket closed with unread bytes sends RST, which
// discards what the kernel has not sent yet.
func (c *conn) Drained() <-chan struct{} { return c.released }

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		err := c.ended("closed locally", nil)
		c.w.stop(err)
		// The FIN waits for the handler call in progress, if any, so that
		// the peer learns of the close after the call that closed returns.
		c.in.CloseLocal(err, func() { c.w.finish(c.closeTimeout) })
		c.setDeadline(time.Now().Add(c.closeTimeout))
		c.closed.Store(true)
		c.wakeReader()
	})
	return nil
}

// read is the reader goroutine: it delivers frames until the stream ends,
// or a poller's read ended it, then reports the end and releases the
// socket. It reads nothing while goroutines poll.
func (c *conn) read() {
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var err error
	for {
		c.awaitPollers(linger)
		c.rxMu.Lock()
		if err = c.pollErr; err != nil {
			c.served = true
			c.rxMu.Unlock()
			break
		}
		c.unkick()
		c.reading.Store(true)
		var f transport.Frame
		f, err = c.fr.next()
		c.reading.Store(false)
		if err == nil {
			c.in.Push(f) // under rxMu: frames reach the inbox in order
		} else if !c.again(err) {
			c.served = true
			c.rxMu.Unlock()
			break
		}
		c.rxMu.Unlock()
		c.in.WaitRoom(c.window, c.stopRead, heldBack)
	}
	if err == io.EOF {
		err = c.ended("closed by the peer", nil)
	} else {
		err = c.ended("receive", err)
	}
	c.in.Fail(c.w.fail(err)) // the first recorded end wins: a local close, a write error, or this
	<-c.w.done
	c.sock.Close()
	close(c.released)
}

// writeFailed fails the connection on a write error. The reader then
// delivers what has arrived, reads to the end and reports this error.
func (c *conn) writeFailed(err error) {
	c.w.fail(c.ended("send", err))
	c.stopOnce.Do(func() { close(c.stopRead) })
	c.sock.CloseRead()
}

// ended describes the end of the connection, naming the peer; every such
// error wraps transport.ErrClosed.
func (c *conn) ended(what string, cause error) error {
	if cause == nil {
		return fmt.Errorf("transport/tcp: connection with peer %s (local %s): %s: %w", c.remote, c.local, what, transport.ErrClosed)
	}
	return fmt.Errorf("transport/tcp: connection with peer %s (local %s): %s: %w: %w", c.remote, c.local, what, cause, transport.ErrClosed)
}
