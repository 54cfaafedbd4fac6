package mux_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
)

// muxNetwork is a transport.Network whose conns are virtual: a dial joins
// the dialer to the listener over a connection of the inner network,
// wrapped in a Mux at both ends, and opens up to perPair comms over one
// connection before it dials another, the way split communicators share
// their parent's links. Each Dial opens a fresh comm at both ends and
// queues the acceptor's on a listener of an Inproc network at the same
// address, which accepts it. The muxes stay open until the test ends, so
// that only close markers tell a peer that its conn closed.
//
// The conformance suite labels its streams with Header.Comm, which a
// virtual conn keeps for its comm id; the conns here carry the label in
// the top 16 bits of Seq instead, and put it back on delivery.
type muxNetwork struct {
	inner   transport.Network
	accepts *transport.Inproc // the listeners that hand out acceptors' conns
	perPair int

	mu        sync.Mutex
	listeners map[string]*muxListener
	muxes     []*mux.Mux
	comms     uint64 // comm ids handed out
}

// newMuxNetwork returns a network over inner whose muxes close after t.
func newMuxNetwork(t testing.TB, inner transport.Network, perPair int) *muxNetwork {
	n := &muxNetwork{inner: inner, accepts: transport.NewInproc(), perPair: perPair, listeners: make(map[string]*muxListener)}
	t.Cleanup(func() {
		n.mu.Lock()
		muxes := n.muxes
		n.mu.Unlock()
		for _, m := range muxes {
			m.Close()
		}
	})
	return n
}

func (n *muxNetwork) Listen(addr string) (transport.Listener, error) {
	inner, err := n.inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	accepts, err := n.accepts.Listen(inner.Addr())
	if err != nil {
		inner.Close()
		return nil, err
	}
	l := &muxListener{Listener: accepts, nw: n, inner: inner}
	n.mu.Lock()
	n.listeners[inner.Addr()] = l
	n.mu.Unlock()
	return l, nil
}

func (n *muxNetwork) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	l := n.listeners[addr]
	n.comms++
	// Spread the ids over 64 bits, as the engine's random ones are.
	comm := n.comms * 0x9E3779B97F4A7C15
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("mux network: dial %q: %w", addr, transport.ErrRefused)
	}
	return l.dial(ctx, comm, hello)
}

// muxListener is the Inproc listener that accepts the comms dialled to
// its address, and the inner network's listener that their connections
// are dialled to.
type muxListener struct {
	transport.Listener
	nw    *muxNetwork
	inner transport.Listener

	mu     sync.Mutex // held across dial, which may dial the inner network
	closed bool
	pair   *pair // the connection that new comms join, while it has room
}

func (l *muxListener) dial(ctx context.Context, comm uint64, hello []byte) (transport.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("mux network: dial %q: %w", l.Addr(), transport.ErrRefused)
	}
	if l.pair == nil || l.pair.opened == l.nw.perPair {
		p, err := l.connect(ctx)
		if err != nil {
			return nil, err
		}
		l.pair = p
	}
	d, a, err := l.pair.open(comm)
	if err != nil {
		return nil, err
	}
	if err := l.nw.accepts.Deliver(l.Addr(), a, hello); err != nil {
		d.Close()
		a.Close()
		return nil, err
	}
	return d, nil
}

// connect dials a fresh connection of the inner network and accepts it.
func (l *muxListener) connect(ctx context.Context) (*pair, error) {
	type result struct {
		conn transport.Conn
		err  error
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan result, 1)
	go func() {
		c, _, err := l.inner.Accept(actx)
		ch <- result{c, err}
	}()
	d, err := l.nw.inner.Dial(ctx, l.inner.Addr(), nil)
	if err != nil {
		cancel()
		if a := <-ch; a.conn != nil {
			a.conn.Close()
		}
		return nil, err
	}
	a := <-ch
	if a.err != nil {
		d.Close()
		return nil, a.err
	}
	p := &pair{muxes: [2]*mux.Mux{mux.New(d), mux.New(a.conn)}}
	l.nw.mu.Lock()
	l.nw.muxes = append(l.nw.muxes, p.muxes[:]...)
	l.nw.mu.Unlock()
	return p, nil
}

// Close closes the comms nobody accepted, so that their dialers learn of
// it; the connections under accepted ones stay.
func (l *muxListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.nw.mu.Lock()
	delete(l.nw.listeners, l.Addr())
	l.nw.mu.Unlock()
	return errors.Join(l.Listener.Close(), l.inner.Close())
}

// pair is one connection of the inner network, with a Mux at each end.
type pair struct {
	muxes  [2]*mux.Mux // dialer, acceptor
	opened int         // comms opened on it
}

// open opens comm at both ends.
func (p *pair) open(comm uint64) (dialer, acceptor *labelConn, err error) {
	var conns [2]*labelConn
	for i, m := range p.muxes {
		c, err := m.Open(comm)
		if err != nil {
			return nil, nil, err
		}
		conns[i] = &labelConn{Conn: c, comm: comm}
	}
	p.opened++
	return conns[0], conns[1], nil
}

// labelConn is a virtual conn that carries the suite's Header.Comm in Seq.
type labelConn struct {
	transport.Conn
	comm uint64
}

const labelShift = 48

func (c *labelConn) Send(f transport.Frame) error {
	if f.Header.Comm >= 1<<(64-labelShift) || f.Header.Seq >= 1<<labelShift {
		transport.Release(f)
		return fmt.Errorf("mux network: comm %d and seq %d do not fit one Seq", f.Header.Comm, f.Header.Seq)
	}
	f.Header.Seq |= f.Header.Comm << labelShift
	f.Header.Comm = c.comm
	return c.Conn.Send(f)
}

func (c *labelConn) Start(h transport.Handler) { c.Conn.Start(unlabel{h}) }

type unlabel struct{ transport.Handler }

func (u unlabel) HandleFrame(f transport.Frame) {
	f.Header.Comm = f.Header.Seq >> labelShift
	f.Header.Seq &= 1<<labelShift - 1
	u.Handler.HandleFrame(f)
}
