package bootstrap

import (
	"context"
	"crypto/rand"
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
// store there, bound to ListenHost's address, and marks it as its job's
// (HostKey). If another process already serves the port, it joins that
// store when it is a launcher's (one without the mark) and fails, naming
// the port and what answered, when it is another job's or no store at all.
// The returned store closes the server with the client.
//
// Dialing retries until timeout: ranks start before the one that hosts.
func Connect(ctx context.Context, addr string, host bool, timeout time.Duration) (store.Store, error) {
	serverOpts, dialOpts := TokenOptions(os.LookupEnv)
	var srv *tcpstore.Server
	if host {
		h, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: store address %q: %w", addr, err)
		}
		srv, err = tcpstore.Listen(ctx, net.JoinHostPort(ListenHost(ctx, h, os.LookupEnv), port), serverOpts...)
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			srv = nil // someone serves it already: a launcher, or another job
			if err := checkTaken(ctx, addr, port, timeout, dialOpts); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, fmt.Errorf("bootstrap: hosting the store at %s: %w", addr, err)
		}
	}
	c, err := tcpstore.Dial(ctx, addr, append(dialOpts, tcpstore.WithTimeout(timeout))...)
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return nil, fmt.Errorf("bootstrap: connecting to the store at %s: %w", addr, err)
	}
	if srv == nil {
		return c, nil
	}
	// A SET has no reply: the CHECK after it, on the same connection,
	// returns once the mark is stored, so that another job's rank 0 that
	// finds the port taken from now on sees it.
	err = c.Set(ctx, HostKey, []byte(hostMark()))
	if err == nil {
		_, err = c.Check(ctx, HostKey)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bootstrap: marking the store at %s: %w", addr, err), c.Close(), srv.Close())
	}
	return &hosted{Client: c, srv: srv}, nil
}

// TokenEnv names a secret that every process of a gocomms-only job shares:
// the store requires it of every connection (tcpstore.RequireToken), so
// that another job, or a stray client, cannot use the store. PyTorch's
// clients cannot present it.
const TokenEnv = "GOCOMMS_STORE_TOKEN"

// TokenOptions returns the server and client options that TokenEnv, when
// lookup finds it set, asks for.
func TokenOptions(lookup func(string) (string, bool)) ([]tcpstore.ServerOption, []tcpstore.DialOption) {
	token, ok := lookup(TokenEnv)
	if !ok || token == "" {
		return nil, nil
	}
	return []tcpstore.ServerOption{tcpstore.RequireToken(token)}, []tcpstore.DialOption{tcpstore.WithToken(token)}
}

// HostKey is the key that a rank 0 hosting its job's store sets to
// hostMark: a store that holds it is some job's, never a launcher's, and
// another job's rank 0 must not join it.
const HostKey = "gocomms/store/host"

// hostMark names this process, and a random nonce, which tells two jobs
// apart even where they run the same program on the same host.
func hostMark() string {
	name, _ := os.Hostname()
	nonce := make([]byte, 8)
	rand.Read(nonce)
	return fmt.Sprintf("%s pid %d nonce %x", name, os.Getpid(), nonce)
}

// probeTimeout bounds finding out what holds a taken port: a process that
// does not answer as a store must not hold rank 0 for the whole timeout.
const probeTimeout = 5 * time.Second

// checkTaken finds out what serves addr, whose port this process could not
// bind, and fails unless it is a store that no job's rank 0 hosts.
func checkTaken(ctx context.Context, addr, port string, timeout time.Duration, dialOpts []tcpstore.DialOption) error {
	notStore := func(err error) error {
		return fmt.Errorf("bootstrap: port %s is taken by something that does not answer as a TCPStore (%w); choose another MASTER_PORT", port, err)
	}
	c, err := tcpstore.Dial(ctx, addr, append(dialOpts, tcpstore.WithTimeout(min(timeout, probeTimeout)))...)
	if err != nil {
		return notStore(err)
	}
	defer c.Close()
	ok, err := c.Check(ctx, HostKey)
	if err != nil {
		return notStore(err)
	}
	if !ok {
		return nil
	}
	mark, err := c.Get(ctx, HostKey)
	if err != nil {
		return fmt.Errorf("bootstrap: port %s is taken by another job's store: %w", port, err)
	}
	return fmt.Errorf("bootstrap: port %s is taken by another job's store, hosted by %s; choose another MASTER_PORT", port, mark)
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
