package tcpstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// serverConn is one client's connection. Its reader decodes requests and
// answers them in order; a notifier goroutine writes the STOP_WAITING bytes
// that other connections' writes release, between whole replies.
type serverConn struct {
	st  *state
	nc  net.Conn
	dec decoder

	wmu   sync.Mutex // held for each whole reply
	enc   encoder
	owed  atomic.Int64  // STOP_WAITING bytes released but not yet written
	nudge chan struct{} // capacity 1: owed has grown
	done  chan struct{} // closed when the reader stops
}

func newServerConn(st *state, nc net.Conn, limits Limits) *serverConn {
	return &serverConn{
		st:    st,
		nc:    nc,
		dec:   decoder{r: bufio.NewReader(nc), limits: limits},
		enc:   encoder{w: bufio.NewWriter(nc)},
		nudge: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
}

// run serves c until the peer leaves, a request is bad, or the connection
// is closed under it, and returns once both goroutines have stopped and the
// connection is closed. The error is nil when the peer left cleanly.
func (c *serverConn) run() error {
	var notifier sync.WaitGroup
	notifier.Go(c.notify)
	err := c.serve()
	c.st.cancel(c)
	close(c.done)
	c.nc.Close()
	notifier.Wait()
	return err
}

// release is called by another connection's write, with the state locked.
func (c *serverConn) release() {
	c.owed.Add(1)
	select {
	case c.nudge <- struct{}{}:
	default:
	}
}

// notify writes released STOP_WAITING bytes until the reader stops.
func (c *serverConn) notify() {
	for {
		select {
		case <-c.nudge:
		case <-c.done:
			return
		}
		if err := c.reply(func(encoder) {}); err != nil {
			c.nc.Close() // the reader notices and stops
			return
		}
	}
}

// reply writes what owed STOP_WAITING bytes there are, then f's reply, and
// flushes. Paying first keeps a STOP_WAITING ahead of the WAIT_CANCELED
// that CANCEL_WAIT writes, as clients expect.
func (c *serverConn) reply(f func(encoder)) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for n := c.owed.Swap(0); n > 0; n-- {
		c.enc.u8(stopWaiting)
	}
	f(c.enc)
	return c.enc.w.Flush()
}

// serve reads the dialect, then requests, until one fails. An end of
// stream between requests is the peer leaving, not an error.
func (c *serverConn) serve() error {
	codes, err := c.detect()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return unexpectedEOF(err)
	}
	for {
		b, err := c.dec.u8()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		o := codes.op(b)
		c.dec.budget = c.dec.limits.requestBudget()
		if err := c.handle(o); err != nil {
			return fmt.Errorf("query %d (%v): %w", b, o, unexpectedEOF(err))
		}
	}
}

// detect tells a 2.2+ client, whose first bytes are VALIDATE and its magic,
// from an older one, whose first request is an ordinary query. Peeking 5
// bytes after a 00 cannot stall an old client: its SET is at least 17.
func (c *serverConn) detect() (numbering, error) {
	first, err := c.dec.r.Peek(1)
	if err != nil {
		return nil, err
	}
	if first[0] != 0 {
		return v1Codes, nil
	}
	head, err := c.dec.r.Peek(5)
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	if !bytes.Equal(head[1:], order.AppendUint32(nil, validateMagic)) {
		return v1Codes, nil
	}
	c.dec.r.Discard(5)
	return v2Codes, nil
}
