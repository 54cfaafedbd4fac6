package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/gocomms/gocomms/transport"
)

// Network is a transport.Network over TCP. Create it with New: the zero
// value has no configuration. It holds only configuration, so one Network
// may serve any number of listeners and connections.
type Network struct {
	cfg config
	err error // invalid options, returned by every Listen and Dial

	advertiseOnce sync.Once
	advertise     string // host to report for a listener bound to every interface
}

var (
	_ transport.Network  = (*Network)(nil)
	_ transport.Borrower = (*Network)(nil)
)

// BorrowsPayloads marks the network as a transport.Borrower: every
// connection it makes writes lent payloads without copying them.
func (*Network) BorrowsPayloads() {}

// New returns a TCP network configured by opts. Invalid options do not
// stop New: every Listen and Dial then fails with the reason.
func New(opts ...Option) *Network {
	n := &Network{cfg: defaultConfig()}
	for _, o := range opts {
		o(&n.cfg)
	}
	n.err = n.cfg.validate()
	return n
}

// Listen listens at addr, "host:port". An empty addr, or an empty host,
// means the configured listen host (every interface by default); port 0
// means a free port from the configured range, or one the kernel picks.
// Addr reports an address peers can dial: see WithAdvertiseHost.
func (n *Network) Listen(addr string) (transport.Listener, error) {
	if n.err != nil {
		return nil, n.err
	}
	host, port := "", "0"
	if addr != "" {
		var err error
		if host, port, err = net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("transport/tcp: listen %q: %w", addr, err)
		}
	}
	if host == "" {
		var err error
		if host, err = n.cfg.defaultHost(); err != nil {
			return nil, fmt.Errorf("transport/tcp: listen %q: %w", addr, err)
		}
	}
	lc := net.ListenConfig{KeepAlive: -1, KeepAliveConfig: n.cfg.keepAlive} // -1: off unless Enable
	listen := func(port string) (net.Listener, error) {
		return lc.Listen(context.Background(), "tcp", net.JoinHostPort(host, port))
	}
	var ln net.Listener
	var err error
	if p, perr := strconv.Atoi(port); perr == nil && p == 0 && n.cfg.portLo != 0 {
		for p := n.cfg.portLo; p <= n.cfg.portHi; p++ {
			if ln, err = listen(strconv.Itoa(p)); !errors.Is(err, syscall.EADDRINUSE) {
				break
			}
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("transport/tcp: listen on %q: every port in %d-%d is taken: %w",
				host, n.cfg.portLo, n.cfg.portHi, transport.ErrAddrInUse)
		}
	} else {
		ln, err = listen(port)
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("transport/tcp: %w: %w", err, transport.ErrAddrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("transport/tcp: %w", err)
	}
	return newListener(ln.(*net.TCPListener), n.dialable(ln.Addr().(*net.TCPAddr)), &n.cfg), nil
}
