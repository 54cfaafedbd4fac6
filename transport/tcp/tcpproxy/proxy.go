package tcpproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
)

// Network is a tcp.Network whose listeners sit behind proxies. Its
// methods are safe for concurrent use.
type Network struct {
	inner *tcp.Network

	mu      sync.Mutex
	proxies []*proxy
}

// New wraps inner.
func New(inner *tcp.Network) *Network { return &Network{inner: inner} }

var (
	_ transport.Network  = (*Network)(nil)
	_ transport.Borrower = (*Network)(nil)
)

// BorrowsPayloads: the connections are inner's, which borrow.
func (*Network) BorrowsPayloads() {}

// Listen listens on inner and fronts the listener with a proxy, whose
// address is the one Addr gives peers to dial.
func (n *Network) Listen(addr string) (transport.Listener, error) {
	l, err := n.inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	p, err := newProxy(l.Addr())
	if err != nil {
		l.Close()
		return nil, err
	}
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	return &listener{Listener: l, p: p}, nil
}

// Dial dials addr, a proxy's address, on inner.
func (n *Network) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	return n.inner.Dial(ctx, addr, hello)
}

// Reset aborts every connection the proxies carry, and reports how many.
// Later connections go through as before.
func (n *Network) Reset() int {
	n.mu.Lock()
	proxies := n.proxies
	n.mu.Unlock()
	reset := 0
	for _, p := range proxies {
		reset += p.reset()
	}
	return reset
}

type listener struct {
	transport.Listener
	p *proxy
}

func (l *listener) Addr() string { return l.p.ln.Addr().String() }

func (l *listener) Close() error {
	return errors.Join(l.p.close(), l.Listener.Close())
}

// proxy forwards each connection accepted on ln to target.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	live   map[*pair]struct{}
	closed bool
}

// pair is one proxied connection: the dialer's socket and ours to the
// target.
type pair struct{ client, server *net.TCPConn }

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, live: map[*pair]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c.(*net.TCPConn))
	}
}

// forward connects client to the target and copies both ways until
// either side ends.
func (p *proxy) forward(client *net.TCPConn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	pr := &pair{client: client, server: s.(*net.TCPConn)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pr.abort()
		return
	}
	p.live[pr] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src *net.TCPConn) {
		io.Copy(dst, src)
		dst.CloseWrite() // pass the end of the stream on
		done <- struct{}{}
	}
	go pipe(pr.server, pr.client)
	go pipe(pr.client, pr.server)
	<-done
	<-done
	p.mu.Lock()
	delete(p.live, pr)
	p.mu.Unlock()
	pr.client.Close()
	pr.server.Close()
}

// abort closes both sockets with a reset instead of an orderly end.
func (pr *pair) abort() {
	for _, c := range []*net.TCPConn{pr.client, pr.server} {
		c.SetLinger(0)
		c.Close()
	}
}

func (p *proxy) reset() int {
	p.mu.Lock()
	live := make([]*pair, 0, len(p.live))
	for pr := range p.live {
		live = append(live, pr)
	}
	p.mu.Unlock()
	for _, pr := range live {
		pr.abort()
	}
	return len(live)
}

func (p *proxy) close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.reset()
	return err
}
