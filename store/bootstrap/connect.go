package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/tcpstore"
)

// Connect returns a client of the store at addr. With host set (rank 0 of
// a job whose launcher hosts no store), this process first serves the
// store there, bound to ListenHost's address; if another process already
// does, it only connects. The returned store closes the server with the
// client.
//
// Dialing retries until timeout: ranks start before the one that hosts.
func Connect(ctx context.Context, addr string, host bool, timeout time.Duration) (store.Store, error) {
	var srv *tcpstore.Server
	if host {
		h, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: store address %q: %w", addr, err)
		}
		srv, err = tcpstore.Listen(ctx, net.JoinHostPort(ListenHost(ctx, h, os.LookupEnv), port))
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			srv = nil // someone serves it already: a launcher, or an earlier job step
		case err != nil:
			return nil, fmt.Errorf("bootstrap: hosting the store at %s: %w", addr, err)
		}
	}
	c, err := tcpstore.Dial(ctx, addr, tcpstore.WithTimeout(timeout))
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return nil, fmt.Errorf("bootstrap: connecting to the store at %s: %w", addr, err)
	}
	if srv == nil {
		return c, nil
	}
	return &hosted{Client: c, srv: srv}, nil
}

// hosted is the client of a store this process serves.
type hosted struct {
	*tcpstore.Client
	srv *tcpstore.Server
}

func (h *hosted) Close() error {
	return errors.Join(h.Client.Close(), h.srv.Close())
}

// shared holds the process's store connections, one per address.
var shared struct {
	sync.Mutex
	stores map[string]store.Store
}

// Shared is Connect for the whole process: every communicator that
// rendezvouses at addr uses one connection (and rank 0 one server), kept
// open for the process's life, so that communicators created one after
// another on the same port never race a server going away.
func Shared(ctx context.Context, addr string, host bool, timeout time.Duration) (store.Store, error) {
	shared.Lock()
	defer shared.Unlock()
	if s := shared.stores[addr]; s != nil {
		return s, nil
	}
	s, err := Connect(ctx, addr, host, timeout)
	if err != nil {
		return nil, err
	}
	if shared.stores == nil {
		shared.stores = map[string]store.Store{}
	}
	shared.stores[addr] = s
	return s, nil
}
