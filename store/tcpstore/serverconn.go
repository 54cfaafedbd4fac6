package tcpstore

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// serverConn is one client's connection. Its reader decodes requests and
// answers them in order; a notifier goroutine writes the STOP_WAITING bytes
// that other connections' writes release, between whole replies.
type serverConn struct {
	st    *state
	nc    net.Conn
	dec   decoder // its limits are the server's
	token string  // still to be presented, if not empty

	wmu   sync.Mutex // held for each whole reply
	enc   encoder
	owed  atomic.Int64  // STOP_WAITING bytes released but not yet written
	nudge chan struct{} // capacity 1: owed has grown
	done  chan struct{} // closed when the reader stops
}

func newServerConn(st *state, nc net.Conn, cfg serverConfig) *serverConn {
	return &serverConn{
		st:    st,
		nc:    nc,
		dec:   decoder{r: bufio.NewReader(nc), limits: cfg.limits},
		token: cfg.token,
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
	if errors.Is(err, errLeft) {
		err = nil
	}
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
	// A peer that does not take its replies must not hold this goroutine.
	c.nc.SetWriteDeadline(time.Now().Add(c.dec.limits.ReadTimeout))
	for n := c.owed.Swap(0); n > 0; n-- {
		c.enc.u8(stopWaiting)
	}
	f(c.enc)
	return c.enc.w.Flush()
}

// serve reads the dialect, then requests, until one fails. An end of
// stream between requests is the peer leaving: errLeft.
func (c *serverConn) serve() error {
	if err := c.awaitRequest(); err != nil {
		return err
	}
	codes, err := c.detect()
	if err != nil {
		return c.late(unexpectedEOF(err))
	}
	for {
		if err := c.awaitRequest(); err != nil {
			return err
		}
		b, err := c.dec.u8()
		if err != nil {
			return c.late(err)
		}
		o := codes.op(b)
		c.dec.budget = c.dec.limits.requestBudget()
		if c.token != "" {
			if err := c.checkToken(o); err != nil {
				return c.late(unexpectedEOF(err))
			}
			continue
		}
		if err := c.handle(o); err != nil {
			err = c.late(unexpectedEOF(err))
			return fmt.Errorf("query %d (%v): %w", b, o, err)
		}
	}
}

// errToken is a connection that did not present the token it must.
var errToken = errors.New("no valid token presented")

// checkToken takes the first request of a server that requires a token,
// which must be a SET of TokenKey to it, and forgets the token once it has
// been presented.
func (c *serverConn) checkToken(o op) error {
	if o != opSet {
		return fmt.Errorf("%w: the first request is %v", errToken, o)
	}
	key, value, err := c.keyValue()
	if err != nil {
		return err
	}
	if key != TokenKey || subtle.ConstantTimeCompare(value, []byte(c.token)) != 1 {
		return errToken
	}
	c.token = ""
	return nil
}

// errLeft is the peer leaving between requests.
var errLeft = errors.New("the peer left")

// awaitRequest waits for the first byte of a request, for IdleTimeout at
// most unless the connection waits for keys, and then gives the whole
// request ReadTimeout to arrive, so a peer that stalls part-way is dropped.
func (c *serverConn) awaitRequest() error {
	for {
		var deadline time.Time
		if c.dec.limits.IdleTimeout > 0 {
			deadline = time.Now().Add(c.dec.limits.IdleTimeout)
		}
		c.nc.SetReadDeadline(deadline)
		_, err := c.dec.r.Peek(1)
		if err == nil {
			c.nc.SetReadDeadline(time.Now().Add(c.dec.limits.ReadTimeout))
			return nil
		}
		if err == io.EOF {
			return errLeft
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if !c.st.waiting(c) {
			return c.timeout(err, "IdleTimeout", c.dec.limits.IdleTimeout)
		}
	}
}

// late names ReadTimeout as the limit that err enforced, if it did.
func (c *serverConn) late(err error) error {
	return c.timeout(err, "ReadTimeout", c.dec.limits.ReadTimeout)
}

// timeout names the limit that a read deadline err enforced.
func (c *serverConn) timeout(err error, name string, limit time.Duration) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w %s=%v: %w", errLimit, name, limit, err)
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
