package tcpstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/gocomms/gocomms/store"
)

// maxIdle is how many idle connections a Client keeps. Each call holds a
// connection for its whole exchange, and a wait holds it until released,
// so concurrent calls open more; those beyond maxIdle close when done.
const maxIdle = 4

// Client is a store.Store backed by a TCPStore server: a Server, or
// PyTorch's of any version. It is safe for concurrent use: each call takes
// a connection of its own from a small pool, opening one when none is idle.
type Client struct {
	addr  string
	cfg   dialConfig
	proto proto // set by Dial

	// closing is cancelled by Close, so that connecting stops too.
	closing  context.Context
	closeNow context.CancelFunc

	mu     sync.Mutex
	closed bool
	idle   []*clientConn
	busy   map[*clientConn]struct{}

	sentinel []byte // for reading a key without waiting in 1.x; see appendV1
}

var _ store.Store = (*Client)(nil)

// Dial connects to the server at addr (host:port), retrying with backoff
// until it answers, ctx ends or the timeout (WithTimeout) passes: ranks
// usually start before the one that hosts the server.
//
// Unless WithVersion says which, Dial probes the dialect. It sends VALIDATE
// and PING in one write: an echo means 2.x (PyTorch 2.5+ or Server), at the
// cost of one round trip. If the server closes the connection instead, Dial
// reconnects and sends the 1.x GETNUMKEYS: a reply means 1.x, at the cost
// of a second connection and round trip. If that connection is closed too,
// or silent for a second (libuv), the server is 2.2 to 2.4, which takes
// VALIDATE without PING; Dial reconnects a third time to speak it.
func Dial(ctx context.Context, addr string, opts ...DialOption) (*Client, error) {
	cfg, err := newDialConfig(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{addr: addr, cfg: cfg, busy: make(map[*clientConn]struct{})}
	c.closing, c.closeNow = context.WithCancel(context.Background())
	c.sentinel = newSentinel()
	cc, err := c.connect(ctx, c.dialFirst)
	if err != nil {
		c.closeNow()
		return nil, err
	}
	c.idle = append(c.idle, cc)
	return c, nil
}

// Version is the dialect the client speaks, Version1 or Version2.
func (c *Client) Version() Version { return c.proto.version }

// Close closes every connection, making calls that wait return
// store.ErrClosed, and later calls too. The server and its keys are not
// affected.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.closeNow()
	conns := c.idle
	c.idle = nil
	for cc := range c.busy {
		conns = append(conns, cc)
	}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.nc.Close()
	}
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// acquire takes an idle connection, or opens one.
func (c *Client) acquire(ctx context.Context) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, store.ErrClosed
	}
	for len(c.idle) > 0 {
		cc := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if cc.stale() {
			cc.nc.Close()
			continue
		}
		c.busy[cc] = struct{}{}
		c.mu.Unlock()
		return cc, nil
	}
	c.mu.Unlock()

	cc, err := c.connect(ctx, c.dialAgain)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cc.nc.Close()
		return nil, store.ErrClosed
	}
	c.busy[cc] = struct{}{}
	return cc, nil
}

// release returns cc to the pool if it is fit for another call.
func (c *Client) release(cc *clientConn, fit bool) {
	c.mu.Lock()
	delete(c.busy, cc)
	if fit && !c.closed && len(c.idle) < maxIdle {
		c.idle = append(c.idle, cc)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	cc.nc.Close()
}

// call runs one exchange on a connection of the pool, bounded by ctx and,
// except while waiting for keys, by the timeout. A connection that fails is
// closed, except that one interrupted in a wait is saved with CANCEL_WAIT
// where the dialect has it. The error names op and keys.
func (c *Client) call(ctx context.Context, op string, keys []string, exchange func(*clientConn) error) error {
	if err := checkKeys(op, keys); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tcpstore: %s%s: %w", op, quoteKeys(keys), err)
	}
	cc, err := c.acquire(ctx)
	if err == nil {
		cc.arm()
		stop := cc.watch(ctx)
		err = exchange(cc)
		fired := stop()
		fit := err == nil
		if err != nil && fired && cc.waiting && c.proto.version == Version2 && !c.isClosed() {
			fit = cc.cancelWait() == nil
		}
		if err != nil && fired {
			err = ctx.Err()
		}
		c.release(cc, fit)
	}
	if err == nil {
		return nil
	}
	if c.isClosed() {
		err = store.ErrClosed
	}
	return fmt.Errorf("tcpstore: %s%s: %w", op, quoteKeys(keys), describe(err))
}

// errDropped stands for the ways a server closing the connection shows.
var errDropped = errors.New("the server closed the connection (it rejects the request, or is gone)")

// describe names a dropped connection as such.
func describe(err error) error {
	if isDropped(err) {
		return fmt.Errorf("%w: %w", errDropped, err)
	}
	return err
}

// checkKeys rejects empty keys before anything is sent.
func checkKeys(op string, keys []string) error {
	for _, k := range keys {
		if k == "" {
			return fmt.Errorf("tcpstore: %s: %w", op, store.ErrEmptyKey)
		}
	}
	return nil
}

// quoteKeys names keys in an error message.
func quoteKeys(keys []string) string {
	switch len(keys) {
	case 0:
		return ""
	case 1:
		return " key " + strconv.Quote(keys[0])
	}
	return fmt.Sprintf(" keys %q", keys)
}
