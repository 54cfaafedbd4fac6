package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
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

	ready chan P
	done  chan struct{} // closed by Close

	mu          sync.Mutex
	closed      bool
	inHandshake map[net.Conn]struct{}
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
		done:        make(chan struct{}),
		inHandshake: make(map[net.Conn]struct{}),
	}
	b.wg.Add(1)
	go b.acceptLoop()
	return b
}

func (b *Backlog[P]) Addr() string { return b.addr }

// Accept returns the next connection through its handshake. It returns
// ctx's error when ctx is done first, and an error wrapping ErrClosed once
// the backlog is closed, even when connections wait.
func (b *Backlog[P]) Accept(ctx context.Context) (Conn, []byte, error) {
	select {
	case <-b.done:
		return nil, nil, b.closedErr()
	default:
	}
	select {
	case p := <-b.ready:
		c, hello := p.Accepted()
		return c, hello, nil
	case <-b.done:
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
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	for c := range b.inHandshake {
		c.Close()
	}
	b.mu.Unlock()

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

func (b *Backlog[P]) acceptLoop() {
	defer b.wg.Done()
	var backoff time.Duration
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait for it to pass
			// rather than spin or stop listening.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-b.done:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		if !b.track(c) {
			c.Close()
			return
		}
		b.wg.Add(1)
		go b.pass(c)
	}
}

// track records a connection in its handshake, so that Close can cut it
// short; false if the backlog is closed.
func (b *Backlog[P]) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.inHandshake[c] = struct{}{}
	return true
}

// pass runs c's handshake and queues what it made for Accept.
func (b *Backlog[P]) pass(c net.Conn) {
	defer b.wg.Done()
	p, err := b.handshake(c)
	b.mu.Lock()
	delete(b.inHandshake, c)
	b.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	select {
	case b.ready <- p:
	case <-b.done:
		p.Drop()
	}
}
