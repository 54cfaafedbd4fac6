package tcpstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Server serves one store over TCP to PyTorch TCPStore clients of 1.x and
// 2.x alike, and to Clients. It tells the dialects apart on each
// connection by its first bytes. Its keys, values and counters behave as
// store.Memory's do.
type Server struct {
	ln   net.Listener // nil for a server fed connections directly (tests)
	st   *state
	cfg  serverConfig
	done chan struct{} // closed by Close

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup // the accept loop and every connection
}

// Listen starts a server on addr, a host:port that may leave either part
// out (":0" picks a free port on every interface). ctx bounds resolving and
// binding only; the server runs until Close.
func Listen(ctx context.Context, addr string, opts ...ServerOption) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcpstore: %w", err)
	}
	s := newServer(newServerConfig(opts))
	s.ln = ln
	s.wg.Go(s.accept)
	return s, nil
}

func newServer(cfg serverConfig) *Server {
	return &Server{
		st:    newState(cfg.limits),
		cfg:   cfg,
		done:  make(chan struct{}),
		conns: make(map[net.Conn]struct{}),
	}
}

// Addr is the address the server listens on, with the port it picked.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening, closes every connection, waits for their
// goroutines and drops the store. It returns nil when called again.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.wg.Wait()
	s.st.close()
	if err != nil {
		return fmt.Errorf("tcpstore: close: %w", err)
	}
	return nil
}

// accept serves every connection the listener accepts until Close.
func (s *Server) accept() {
	var delay time.Duration
	for {
		nc, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of descriptors and the like: back off rather than spin,
			// as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.cfg.logger.Warn("tcpstore: accept failed", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
				continue
			case <-s.done:
				return
			}
		}
		delay = 0
		s.wg.Go(func() { s.serveConn(nc) })
	}
}

// serveConn serves nc until it ends, and closes it.
func (s *Server) serveConn(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if n, limit := len(s.conns), s.cfg.limits.MaxConns; n >= limit {
		s.mu.Unlock()
		nc.Close()
		s.cfg.logger.Warn("tcpstore: refused a connection", "remote", nc.RemoteAddr(), "err", overLimit("connections", n+1, "MaxConns", limit))
		return
	}
	s.conns[nc] = struct{}{}
	s.mu.Unlock()

	err := newServerConn(s.st, nc, s.cfg).run()

	s.mu.Lock()
	delete(s.conns, nc)
	closing := s.closed
	s.mu.Unlock()
	switch {
	case err == nil || closing:
	case errors.Is(err, errLimit), errors.Is(err, errToken):
		s.cfg.logger.Warn("tcpstore: closed a connection at a limit or without the token", "remote", nc.RemoteAddr(), "err", err)
	default:
		s.cfg.logger.Debug("tcpstore: closed a connection", "remote", nc.RemoteAddr(), "err", err)
	}
}
