package topo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gocomms/gocomms/transport"
)

// Network reaches peers through Local where Reachable says they are on
// this host, through Remote otherwise. Either network may be nil.
type Network struct {
	local, remote transport.Network
	reachable     func(addr string) bool
}

var (
	_ transport.Network  = (*Network)(nil)
	_ transport.Borrower = (*Network)(nil)
)

// New returns a network over local and remote (either may be nil, not
// both), dialling a local address when reachable reports it on this host.
// Both networks must lend payloads (transport.Borrower) when present, as
// nvl's and tcp's do, since the joined network says it does.
func New(local, remote transport.Network, reachable func(addr string) bool) (*Network, error) {
	for _, nw := range []transport.Network{local, remote} {
		if _, ok := nw.(transport.Borrower); nw != nil && !ok {
			return nil, fmt.Errorf("transport/topo: %T does not lend payloads", nw)
		}
	}
	if local == nil && remote == nil {
		return nil, errors.New("transport/topo: no network to join")
	}
	return &Network{local: local, remote: remote, reachable: reachable}, nil
}

// BorrowsPayloads marks the network as a transport.Borrower: both of its
// networks are.
func (*Network) BorrowsPayloads() {}

const sep = "|"

// split parses an address of this network into its parts, either of
// which may be empty.
func split(addr string) (remote, local string) {
	remote, local, _ = strings.Cut(addr, sep)
	return remote, local
}

// Listen listens on both networks: at addr's parts, or fresh addresses
// for "".
func (n *Network) Listen(addr string) (transport.Listener, error) {
	remoteAddr, localAddr := split(addr)
	var parts []transport.Listener
	for _, p := range []struct {
		nw   transport.Network
		addr string
	}{{n.remote, remoteAddr}, {n.local, localAddr}} {
		if p.nw == nil || addr != "" && p.addr == "" {
			parts = append(parts, nil)
			continue
		}
		l, err := p.nw.Listen(p.addr)
		if err != nil {
			for _, l := range parts {
				if l != nil {
					l.Close()
				}
			}
			return nil, err
		}
		parts = append(parts, l)
	}
	return newListener(parts[0], parts[1]), nil
}

// Dial connects to the listener at addr over the local network if its
// local part is reachable, and over the remote one otherwise.
func (n *Network) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	remoteAddr, localAddr := split(addr)
	if n.local != nil && localAddr != "" && n.reachable(localAddr) {
		c, err := n.local.Dial(ctx, localAddr, hello)
		if err == nil || remoteAddr == "" || n.remote == nil || !errors.Is(err, transport.ErrRefused) {
			return c, err
		}
	}
	if n.remote == nil || remoteAddr == "" {
		return nil, fmt.Errorf("transport/topo: dial %q: no network of this process reaches it: %w", addr, transport.ErrRefused)
	}
	return n.remote.Dial(ctx, remoteAddr, hello)
}

// listener takes connections from both parts, each in a goroutine of its
// own, and hands them to Accept in the order they come.
type listener struct {
	remote, local transport.Listener
	addr          string

	accepted chan accepted
	done     chan struct{}
	stop     context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once
}

type accepted struct {
	conn  transport.Conn
	hello []byte
}

func newListener(remote, local transport.Listener) *listener {
	ctx, stop := context.WithCancel(context.Background())
	l := &listener{remote: remote, local: local, accepted: make(chan accepted), done: make(chan struct{}), stop: stop}
	var addrs []string
	for _, part := range []transport.Listener{remote, local} {
		if part == nil {
			addrs = append(addrs, "")
			continue
		}
		addrs = append(addrs, part.Addr())
		l.wg.Add(1)
		go l.take(ctx, part)
	}
	l.addr = strings.Join(addrs, sep)
	return l
}

// take passes part's connections to Accept until the listener closes.
func (l *listener) take(ctx context.Context, part transport.Listener) {
	defer l.wg.Done()
	for {
		c, hello, err := part.Accept(ctx)
		if err != nil {
			return // closed: Close follows, or is under way
		}
		select {
		case l.accepted <- accepted{c, hello}:
		case <-l.done:
			c.Close()
			return
		}
	}
}

func (l *listener) Addr() string { return l.addr }

func (l *listener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	select {
	case <-l.done:
		return nil, nil, l.closedErr()
	default:
	}
	select {
	case a := <-l.accepted:
		return a.conn, a.hello, nil
	case <-l.done:
		return nil, nil, l.closedErr()
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("transport/topo: accept on %s: %w", l.addr, ctx.Err())
	}
}

func (l *listener) closedErr() error {
	return fmt.Errorf("transport/topo: accept on %s: listener closed: %w", l.addr, transport.ErrClosed)
}

// Close closes both parts and hangs up on connections taken from them
// that Accept has not returned.
func (l *listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		l.stop()
		for _, part := range []transport.Listener{l.remote, l.local} {
			if part != nil {
				err = errors.Join(err, part.Close())
			}
		}
		l.wg.Wait()
	})
	return err
}
