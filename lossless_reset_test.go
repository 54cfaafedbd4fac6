package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport"
)

// resettable is an in-process network, whose connections are lossless,
// that can close every connection it made at once: a lossless transport
// whose connections break while both ends live.
type resettable struct {
	*transport.Inproc
	mu    sync.Mutex
	conns []transport.Conn
}

func (n *resettable) keep(c transport.Conn) transport.Conn {
	n.mu.Lock()
	n.conns = append(n.conns, c)
	n.mu.Unlock()
	return c
}

func (n *resettable) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	c, err := n.Inproc.Dial(ctx, addr, hello)
	if err != nil {
		return nil, err
	}
	return n.keep(c), nil
}

func (n *resettable) Listen(addr string) (transport.Listener, error) {
	l, err := n.Inproc.Listen(addr)
	return resettableListener{l, n}, err
}

type resettableListener struct {
	transport.Listener
	n *resettable
}

func (l resettableListener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	c, hello, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, nil, err
	}
	return l.n.keep(c), hello, nil
}

// reset closes every connection made so far and reports how many.
func (n *resettable) reset() int {
	n.mu.Lock()
	conns := n.conns
	n.conns = nil
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

// TestLosslessResetFailsNotHangs: over a lossless transport, frames of a
// collective go around the links (run off the actors, or sent around its
// link by the collective actor), which keep no copy to resend, and a
// broken connection is a failed peer. When every connection breaks under
// running all-reduces, each rank's all-reduce either completes with the
// plain loop's result or fails at once with ErrPeerFailed naming a rank;
// none waits out its timeout.
func TestLosslessResetFailsNotHangs(t *testing.T) {
	const ranks, iters, count, resetAt = 4, 20, 1 << 12, 5
	nw := &resettable{Inproc: transport.NewInproc()}
	var failed atomic.Int64
	local(t, ranks, func(ctx context.Context, c *gocomms.Comm) error {
		x := make([]float32, count)
		for it := range iters {
			if it == resetAt && c.Rank() == 0 {
				nw.reset() // the others may be in this all-reduce already
			}
			for i := range x {
				x[i] = float32((c.Rank()+1)*(it+1)) + float32(i%7)
			}
			start := time.Now()
			err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum, gocomms.OpTimeout(time.Minute))
			var oe *gocomms.OpError
			switch {
			case time.Since(start) > 10*time.Second:
				return fmt.Errorf("iteration %d: waited %v: %v", it, time.Since(start), err)
			case errors.Is(err, gocomms.ErrPeerFailed) && errors.As(err, &oe) && len(oe.Ranks) > 0:
				failed.Add(1)
				return finalizeExpectingFailures(ctx, c)
			case err != nil:
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			for i, got := range x {
				if want := float32(ranks*(ranks+1)/2*(it+1)) + float32(ranks*(i%7)); got != want {
					return fmt.Errorf("iteration %d: element %d = %v, want %v", it, i, got, want)
				}
			}
		}
		return nil
	}, gocomms.WithNetwork(nw))
	if failed.Load() == 0 {
		t.Errorf("every connection broke and every all-reduce went on")
	}
}
