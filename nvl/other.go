//go:build !linux

package nvl

import (
	"context"
	"errors"

	"github.com/gocomms/gocomms/transport"
)

// Network is the shared-memory network where there is none: memory files,
// abstract sockets and cross-memory reads are Linux's. Every Listen and
// Dial fails, and Reachable says no address is, so a joined network
// (transport/topo) goes over TCP.
type Network struct {
	cfg config
	err error
}

var errUnsupported = errors.New("nvl: shared memory between processes needs Linux")

// New returns a network whose Listen and Dial fail.
func New(opts ...Option) *Network {
	n := &Network{cfg: defaultConfig()}
	for _, o := range opts {
		o(&n.cfg)
	}
	return n
}

// BorrowsPayloads marks the network as a transport.Borrower.
func (*Network) BorrowsPayloads() {}

// Host returns "": no address is this host's.
func Host() string { return "" }

// Reachable reports false: no address is.
func Reachable(string) bool { return false }

func (n *Network) Listen(string) (transport.Listener, error) { return nil, errUnsupported }

func (n *Network) Dial(context.Context, string, []byte) (transport.Conn, error) {
	return nil, errUnsupported
}

// Shared is shared memory where there is none.
type Shared struct {
	Mem    []byte
	Handle SharedHandle
}

// SharedHandle names shared memory.
type SharedHandle struct {
	PID int
	FD  int
	Ino uint64
}

// NewShared fails: there is no shared memory here.
func NewShared(int) (*Shared, error) { return nil, errUnsupported }

// Close does nothing.
func (*Shared) Close() error { return nil }

// MapShared fails: there is no shared memory here.
func MapShared(SharedHandle, int) ([]byte, func() error, error) { return nil, nil, errUnsupported }
