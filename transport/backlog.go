package transport

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/gocomms/gocomms/internal/accept"
)

// backlogLen is how many connections may finish their handshake before
// Accept takes them; further ones wait in their handshake goroutines.
const backlogLen = 64

// Backlog is the Listener of the transports that listen on sockets: it
// accepts in its own goroutine and runs the handshake of each connection
// in a goroutine of its own, so that a slow or silent dialer holds up
// nobody; connections that pass wait, as whatever the handshake made of
// them (P), for Accept. The handshake answers the dialer before Accept is
// called: Dial does not wait for the application.
type Backlog[P Pending] struct {
	ln        net.Listener
	addr      string
	what      string // "transport/tcp: accept on ADDR", for errors
	handshake func(net.Conn) (P, error)

	ready       chan P
	inHandshake *accept.Conns  // hung up on by Close
	wg          sync.WaitGroup // the accept loop and the handshakes
}

// Pending is a connection through a Backlog's handshake, waiting for
// Accept.
type Pending interface {
	// Accepted is the connection Accept returns, and its dialer's hello.
	Accepted() (Conn, []byte)
	// Drop lets go of a connection that is never accepted.
	Drop()
}

var _ Listener = (*Backlog[Pending])(nil)

// NewBacklog starts accepting on ln, whose address Addr reports as addr.
// handshake runs on each connection and, if it fails, the connection is
// closed. Errors start with pkg and the address ("transport/tcp: accept on
// 10.0.0.7:29500").
func NewBacklog[P Pending](ln net.Listener, addr, pkg string, handshake func(net.Conn) (P, error)) *Backlog[P] {
	b := &Backlog[P]{
		ln:          ln,
		addr:        addr,
		what:        pkg + ": accept on " + addr,
		handshake:   handshake,
		ready:       make(chan P, backlogLen),
		inHandshake: accept.NewConns(0),
	}
	b.wg.Go(b.acceptLoop)
	return b
}

func (b *Backlog[P]) Addr() string { return b.addr }

// Accept returns the next connection through its handshake. It returns
// ctx's error when ctx is done first, and an error wrapping ErrClosed once
// the backlog is closed, even when connections wait.
func (b *Backlog[P]) Accept(ctx context.Context) (Conn, []byte, error) {
	select {
	case <-b.inHandshake.Done():
		return nil, nil, b.closedErr()
	default:
	}
	select {
	case p := <-b.ready:
		c, hello := p.Accepted()
		return c, hello, nil
	case <-b.inHandshake.Done():
		return nil, nil, b.closedErr()
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("%s: %w", b.what, ctx.Err())
	}
}

func (b *Backlog[P]) closedErr() error {
	return fmt.Errorf("%s: listener closed: %w", b.what, ErrClosed)
}

// Close stops accepting and hangs up on connections that were not
// accepted yet, so that their dialers learn of it. It returns once the
// backlog's goroutines have ended.
func (b *Backlog[P]) Close() error {
	if !b.inHandshake.Close() {
		return nil
	}
	err := b.ln.Close()
	b.wg.Wait()
	for {
		select {
		case p := <-b.ready:
			p.Drop()
		default:
			if err != nil {
				return fmt.Errorf("%s: close: %w", b.what, err)
			}
			return nil
		}
	}
}

// acceptLoop starts a handshake for each connection until Close.
func (b *Backlog[P]) acceptLoop() {
	accept.Loop(b.ln, b.inHandshake.Done(), nil, func(c net.Conn) bool {
		if b.inHandshake.Add(c) != nil {
			c.Close()
			return false
		}
		b.wg.Go(func() { b.pass(c) })
		return true
	})
}

// pass runs c's handshake and queues what it made for Accept.
func (b *Backlog[P]) pass(c net.Conn) {
	p, err := b.handshake(c)
	b.inHandshake.Remove(c)
	if err != nil {
		c.Close()
		return
	}
	select {
	case b.ready <- p:
	case <-b.inHandshake.Done():
		p.Drop()
	}
}
