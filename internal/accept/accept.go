package accept

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Loop accepts on ln and hands each connection to handle, until ln is
// closed, done is, or handle reports false. A failed Accept other than
// ln's closing (out of descriptors, say) is passed to failed, if not nil,
// and retried after a delay that doubles from 5 ms to 1 s, as net/http
// does, rather than spinning or giving up.
func Loop(ln net.Listener, done <-chan struct{}, failed func(err error, retry time.Duration), handle func(net.Conn) bool) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if failed != nil {
				failed(err, delay)
			}
			select {
			case <-time.After(delay):
				continue
			case <-done:
				return
			}
		}
		delay = 0
		if !handle(c) {
			return
		}
	}
}

// ErrFull is Conns.Add's refusal of a connection over the set's limit.
var ErrFull = errors.New("accept: too many connections")

// Conns is the set of connections a server holds open. Closing it hangs up
// on all of them, so that their peers learn of it at once and whatever
// blocks on them returns.
type Conns struct {
	limit int
	done  chan struct{}

	mu     sync.Mutex
	closed bool
	open   map[net.Conn]struct{}
}

// NewConns returns an empty set that holds at most limit connections, or
// any number where limit is 0.
func NewConns(limit int) *Conns {
	return &Conns{limit: limit, done: make(chan struct{}), open: make(map[net.Conn]struct{})}
}

// Done is closed when the set is.
func (s *Conns) Done() <-chan struct{} { return s.done }

// Add adds c. It returns net.ErrClosed once the set is closed, and ErrFull
// when it holds its limit.
func (s *Conns) Add(c net.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return net.ErrClosed
	case s.limit > 0 && len(s.open) >= s.limit:
		return ErrFull
	}
	s.open[c] = struct{}{}
	return nil
}

// Remove takes c out of the set, and reports whether the set is closed.
func (s *Conns) Remove(c net.Conn) (closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, c)
	return s.closed
}

// Close closes Done and every connection in the set. It reports false,
// and does nothing, when the set was closed already.
func (s *Conns) Close() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	close(s.done)
	for c := range s.open {
		c.Close()
	}
	return true
}
