package tcpstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/gocomms/gocomms/store"
)

// proto is the dialect a client speaks, once known.
type proto struct {
	version Version // Version1 or Version2
	ping    bool    // the server echoes PING (2.x from 2.5, and Server)
}

func (p proto) codes() numbering {
	if p.version == Version2 {
		return v2Codes
	}
	return v1Codes
}

// probeSilence is how long a probe waits for a reply to the 1.x GETNUMKEYS
// before taking silence for a 2.x libuv server; any live server answers
// GETNUMKEYS in well under a millisecond.
const probeSilence = time.Second

// connect opens a connection with try, retrying with backoff until ctx
// ends, the timeout passes or the client is closed.
func (c *Client) connect(ctx context.Context, try func(context.Context) (*clientConn, error)) (*clientConn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	ctx, cancelClosed := context.WithCancelCause(ctx)
	defer cancelClosed(nil)
	defer context.AfterFunc(c.closing, func() { cancelClosed(store.ErrClosed) })()

	var b backoff
	for {
		cc, err := try(ctx)
		if err == nil {
			return cc, nil
		}
		if ctx.Err() == nil {
			b.wait(ctx)
		}
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), store.ErrClosed) {
				return nil, store.ErrClosed
			}
			return nil, fmt.Errorf("connecting to %s: %w; last attempt: %w", c.addr, ctx.Err(), err)
		}
	}
}

// dialFirst opens Dial's connection, finding the dialect unless it is set.
func (c *Client) dialFirst(ctx context.Context) (*clientConn, error) {
	switch c.cfg.version {
	case Version1:
		c.proto = proto{version: Version1}
	case Version2:
		c.proto = proto{version: Version2, ping: true}
	default:
		return c.probe(ctx)
	}
	return c.dialAgain(ctx)
}

// dialAgain opens a connection in the dialect found at Dial.
func (c *Client) dialAgain(ctx context.Context) (*clientConn, error) {
	return c.open(ctx, c.proto)
}

// probe finds the server's dialect, as Dial describes, and returns a
// connection that speaks it.
func (c *Client) probe(ctx context.Context) (*clientConn, error) {
	modern := proto{version: Version2, ping: true}
	cc, err := c.dialTCP(ctx, modern)
	if err != nil {
		return nil, err
	}
	if err = c.hello(ctx, cc, modern); err == nil {
		c.proto = modern
		return cc, nil
	}
	cc.nc.Close()
	if !isDropped(err) {
		return nil, err
	}

	old := proto{version: Version1}
	if cc, err = c.dialTCP(ctx, old); err != nil {
		return nil, err
	}
	if err = c.numKeysProbe(ctx, cc); err == nil {
		c.proto = old
		return cc, nil
	}
	cc.nc.Close()
	if ctx.Err() != nil || !isDropped(err) && !errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, err
	}

	noPing := proto{version: Version2}
	if cc, err = c.open(ctx, noPing); err != nil {
		return nil, err
	}
	c.proto = noPing
	return cc, nil
}

// open opens a connection and greets the server in dialect p.
func (c *Client) open(ctx context.Context, p proto) (*clientConn, error) {
	cc, err := c.dialTCP(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := c.hello(ctx, cc, p); err != nil {
		cc.nc.Close()
		return nil, err
	}
	return cc, nil
}

// dialTCP opens a bare connection for dialect p.
func (c *Client) dialTCP(ctx context.Context, p proto) (*clientConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	return newClientConn(nc, p.codes(), c.cfg.timeout), nil
}

// hello sends 2.x's VALIDATE, and PING where the server answers it, in one
// write: the libuv server needs VALIDATE's 5 bytes in one read, and a 1.x
// server fails at once on the whole, where parts would stall it (PING's
// nonce has bit 23 set so that 1.x reads an impossible length). 1.x has no
// greeting.
func (c *Client) hello(ctx context.Context, cc *clientConn, p proto) error {
	if p.version == Version1 {
		if c.cfg.token == "" {
			return nil
		}
		cc.arm()
		defer cc.watch(ctx)()
		c.presentToken(cc)
		return cc.send()
	}
	cc.arm()
	defer cc.watch(ctx)()
	cc.query(opValidate)
	cc.enc.u32(validateMagic)
	c.presentToken(cc) // before PING, whose echo then confirms it
	if !p.ping {
		return cc.send()
	}
	nonce := rand.Uint32() | 1<<23
	cc.query(opPing)
	cc.enc.u32(nonce)
	echo, err := exchange(cc, (*decoder).u32)
	if err != nil {
		return err
	}
	if echo != nonce {
		return fmt.Errorf("PING %#x echoed as %#x", nonce, echo)
	}
	return nil
}

// numKeysProbe sends the 1.x GETNUMKEYS and reads a reply, giving up after
// probeSilence.
func (c *Client) numKeysProbe(ctx context.Context, cc *clientConn) error {
	cc.nc.SetDeadline(time.Now().Add(min(probeSilence, c.cfg.timeout)))
	defer cc.watch(ctx)()
	c.presentToken(cc)
	cc.query(opNumKeys)
	_, err := exchange(cc, (*decoder).i64)
	return err
}

// presentToken queues the SET that presents the token, if there is one.
func (c *Client) presentToken(cc *clientConn) {
	if c.cfg.token == "" {
		return
	}
	cc.query(opSet)
	cc.enc.str(TokenKey)
	cc.enc.str(c.cfg.token)
}

// isDropped reports the ways a connection closed by the server shows.
func isDropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// backoff spaces connection attempts: 100 ms ±50 % at first, growing 1.5×
// each time up to 5 s. PyTorch 2.x starts at 500 ms and grows to 60 s; a
// quicker start suits ranks that wait for a server starting on a nearby
// host, and a few hundred of them retrying every few seconds is harmless.
type backoff struct{ next time.Duration }

func (b *backoff) wait(ctx context.Context) {
	if b.next == 0 {
		b.next = 100 * time.Millisecond
	}
	d := b.next/2 + rand.N(b.next)
	b.next = min(b.next*3/2, 5*time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
