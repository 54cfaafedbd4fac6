package transport

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// Inproc is an in-process Network. Addresses are names private to one Inproc
// value ("inproc/7"); connections are pairs of in-memory queues and start no
// goroutines. The zero value is ready to use.
//
// Send may run the peer's handler in the caller's goroutine, so a caller
// must not hold a lock across Send that the peer's handler takes; handlers
// that only post to a mailbox, as the contract asks, never do.
type Inproc struct {
	mu        sync.Mutex
	next      uint64 // last number handed out for a fresh address
	listeners map[string]*inprocListener
}

var _ Network = (*Inproc)(nil)

// NewInproc returns an empty in-process network.
func NewInproc() *Inproc {
	return &Inproc{}
}

// freshAddr returns an address no listener holds. Called with n.mu held.
func (n *Inproc) freshAddr() string {
	for {
		n.next++
		addr := "inproc/" + strconv.FormatUint(n.next, 10)
		if _, taken := n.listeners[addr]; !taken {
			return addr
		}
	}
}

// Listen listens at addr, or at a fresh address when addr is "".
func (n *Inproc) Listen(addr string) (Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr == "" {
		addr = n.freshAddr()
	} else if _, taken := n.listeners[addr]; taken {
		return nil, fmt.Errorf("transport: inproc listen %q: %w", addr, ErrAddrInUse)
	}
	if n.listeners == nil {
		n.listeners = make(map[string]*inprocListener)
	}
	l := &inprocListener{
		net:   n,
		addr:  addr,
		ready: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	n.listeners[addr] = l
	return l, nil
}

// Dial connects to the listener at addr. It never waits for Accept: the
// connection joins the listener's backlog, and frames sent before the
// acceptor starts its end are queued.
func (n *Inproc) Dial(ctx context.Context, addr string, hello []byte) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: inproc dial %q: %w", addr, err)
	}
	n.mu.Lock()
	local := n.freshAddr()
	n.mu.Unlock()
	dialer, acceptor := newInprocPair(local, addr)
	if err := n.Deliver(addr, acceptor, hello); err != nil {
		return nil, err
	}
	return dialer, nil
}

// Deliver queues c, the acceptor's end of a connection made elsewhere, on
// the listener at addr, as Dial queues the end of the pair it makes:
// Accept returns c with a copy of hello, and Close closes c if nobody
// accepted it. A Network whose connections are not Inproc's own (virtual
// ones over another transport, say) can listen through Inproc with it. It
// fails with ErrRefused where no open listener is at addr.
func (n *Inproc) Deliver(addr string, c Conn, hello []byte) error {
	if len(hello) > MaxHello {
		return fmt.Errorf("transport: inproc dial %q: hello of %d bytes exceeds %d", addr, len(hello), MaxHello)
	}
	n.mu.Lock()
	l := n.listeners[addr]
	n.mu.Unlock()
	if l == nil {
		return fmt.Errorf("transport: inproc dial %q: nothing listens there: %w", addr, ErrRefused)
	}
	if !l.enqueue(c, append([]byte(nil), hello...)) {
		return fmt.Errorf("transport: inproc dial %q: listener closed: %w", addr, ErrRefused)
	}
	return nil
}

func (n *Inproc) unregister(l *inprocListener) {
	n.mu.Lock()
	if n.listeners[l.addr] == l {
		delete(n.listeners, l.addr)
	}
	n.mu.Unlock()
}

// inprocListener holds dialled connections until Accept takes them.
type inprocListener struct {
	net  *Inproc
	addr string

	mu      sync.Mutex
	closed  bool
	backlog []pending

	ready chan struct{} // holds a token while the backlog may be non-empty
	done  chan struct{} // closed by Close
}

type pending struct {
	conn  Conn
	hello []byte
}

var _ Listener = (*inprocListener)(nil)

func (l *inprocListener) Addr() string { return l.addr }

// enqueue adds a dialled connection to the backlog; false if l is closed.
func (l *inprocListener) enqueue(c Conn, hello []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.backlog = append(l.backlog, pending{c, hello})
	l.signal()
	return true
}

// signal leaves a wake-up token for one Accept. Called with l.mu held.
func (l *inprocListener) signal() {
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

func (l *inprocListener) Accept(ctx context.Context) (Conn, []byte, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, nil, fmt.Errorf("transport: inproc accept on %s: %w", l.addr, ErrClosed)
		}
		if len(l.backlog) > 0 {
			p := l.backlog[0]
			l.backlog[0] = pending{}
			l.backlog = l.backlog[1:]
			if len(l.backlog) > 0 {
				l.signal() // pass the wake-up on to the next Accept
			}
			l.mu.Unlock()
			return p.conn, p.hello, nil
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("transport: inproc accept on %s: %w", l.addr, ctx.Err())
		case <-l.done:
		case <-l.ready:
		}
	}
}

// Close stops accepting, frees the address, and closes connections that were
// dialled but never accepted, so their dialers learn of it.
func (l *inprocListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	backlog := l.backlog
	l.backlog = nil
	close(l.done)
	l.mu.Unlock()

	l.net.unregister(l)
	for _, p := range backlog {
		p.conn.Close() // may call the dialer's handler: no lock held
	}
	return nil
}
