package tcpstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gocomms/gocomms/internal/accept"
)

// Server serves one store over TCP to PyTorch TCPStore clients of 1.x and
// 2.x alike, and to Clients. It tells the dialects apart on each
// connection by its first bytes. Its keys, values and counters behave as
// store.Memory's do.
type Server struct {
	ln    net.Listener // nil for a server fed connections directly (tests)
	st    *state
	cfg   serverConfig
	conns *accept.Conns  // hung up on by Close
	wg    sync.WaitGroup // the accept loop and every connection
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
	s.wg.Go(s.serve)
	return s, nil
}

func newServer(cfg serverConfig) *Server {
	return &Server{
		st:    newState(cfg.limits),
		cfg:   cfg,
		conns: accept.NewConns(cfg.limits.MaxConns),
	}
}

// Addr is the address the server listens on, with the port it picked.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening, closes every connection, waits for their
// goroutines and drops the store. It returns nil when called again.
func (s *Server) Close() error {
	if !s.conns.Close() {
		return nil
	}
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

// serve serves every connection the listener accepts until Close.
func (s *Server) serve() {
	failed := func(err error, retry time.Duration) {
		s.cfg.logger.Warn("tcpstore: accept failed", "err", err, "retry_in", retry)
	}
	accept.Loop(s.ln, s.conns.Done(), failed, func(nc net.Conn) bool {
		s.wg.Go(func() { s.serveConn(nc) })
		return true
	})
}

// serveConn serves nc until it ends, and closes it.
func (s *Server) serveConn(nc net.Conn) {
	if err := s.conns.Add(nc); err != nil {
		nc.Close()
		if errors.Is(err, accept.ErrFull) {
			limit := s.cfg.limits.MaxConns
			s.cfg.logger.Warn("tcpstore: refused a connection", "remote", nc.RemoteAddr(), "err", overLimit("connections", limit+1, "MaxConns", limit))
		}
		return
	}

	err := newServerConn(s.st, nc, s.cfg).run()

	closing := s.conns.Remove(nc)
	switch {
	case err == nil || closing:
	case errors.Is(err, errLimit), errors.Is(err, errToken):
		s.cfg.logger.Warn("tcpstore: closed a connection at a limit or without the token", "remote", nc.RemoteAddr(), "err", err)
	default:
		s.cfg.logger.Debug("tcpstore: closed a connection", "remote", nc.RemoteAddr(), "err", err)
	}
}
