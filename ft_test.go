package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// TestShrinkAfterAFailure has one of five ranks fail (it aborts, closing
// its connections) while the others all-reduce: they fail naming it, agree
// on it, shrink to a communicator of four with dense ranks over the
// connections they already share, and 100 all-reduces there are correct.
func TestShrinkAfterAFailure(t *testing.T) {
	const n, dead = 5, 2
	gate := newStartGate(n - 1)
	local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == dead {
			gate.wait(ctx) // the others wait in the all-reduce
			c.Abort(errors.New("simulated crash"))
			return nil
		}
		gate.arm(c, gocomms.OpAllReduce)
		err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
		if e := wantErr(err, gocomms.ErrPeerFailed, "all_reduce with a rank gone"); e != nil {
			return e
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		flags, failed, err := c.Agree(sctx, uint64(1)<<c.Rank()|1<<10)
		if err != nil {
			return fmt.Errorf("agree: %w", err)
		}
		if want := uint64(1) << 10; flags != want || !slices.Equal(failed, []int{dead}) {
			return fmt.Errorf("agreed flags %x and failed %v, want %x and [%d]", flags, failed, want, dead)
		}
		s, err := c.Shrink(sctx)
		if err != nil {
			return fmt.Errorf("shrink: %w", err)
		}
		wantRank := c.Rank()
		if c.Rank() > dead {
			wantRank--
		}
		if s.Size() != n-1 || s.Rank() != wantRank {
			return fmt.Errorf("shrunk to rank %d of %d, want %d of %d", s.Rank(), s.Size(), wantRank, n-1)
		}
		for it := range 100 {
			x := []int64{int64(c.Rank()*1000 + it)}
			if err := s.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
				return fmt.Errorf("all_reduce %d after shrinking: %w", it, err)
			}
			want := int64(0)
			for r := range n {
				if r != dead {
					want += int64(r*1000 + it)
				}
			}
			if x[0] != want {
				return fmt.Errorf("all_reduce %d after shrinking = %d, want %d", it, x[0], want)
			}
		}
		if err := s.Finalize(ctx); err != nil {
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestRevoke has rank 0 revoke the communicator while the others wait in
// an all-reduce it never joins: they fail at once with ErrRevoked naming
// it, later operations and splits fail the same way, and agreement and
// shrinking still work, to a communicator of all four.
func TestRevoke(t *testing.T) {
	gate := newStartGate(3)
	local(t, 4, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 0 {
			// Connect to every rank first, as ranks that have worked
			// together have: the word spreads over connections.
			if err := c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.Sum, gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: "recursive_doubling"})); err != nil {
				return err
			}
			gate.wait(ctx) // the others wait in the second all-reduce
			if err := c.Revoke(); err != nil {
				return err
			}
		} else {
			if err := c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.Sum, gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: "recursive_doubling"})); err != nil {
				return err
			}
			gate.arm(c, gocomms.OpAllReduce)
			err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
			if e := wantErr(err, gocomms.ErrRevoked, "all_reduce during a revoke"); e != nil {
				return e
			}
		}
		if e := wantErr(c.Barrier(ctx), gocomms.ErrRevoked, "barrier after the revoke"); e != nil {
			return e
		}
		if _, err := c.SplitByColor(ctx, 0, 0); !errors.Is(err, gocomms.ErrRevoked) {
			return fmt.Errorf("split of a revoked communicator: %v, want ErrRevoked", err)
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := c.Shrink(sctx)
		if err != nil {
			return fmt.Errorf("shrink after the revoke: %w", err)
		}
		if s.Size() != 4 || s.Rank() != c.Rank() {
			return fmt.Errorf("shrunk to rank %d of %d, want %d of 4", s.Rank(), s.Size(), c.Rank())
		}
		x := []int64{int64(c.Rank())}
		if err := s.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil || x[0] != 6 {
			return fmt.Errorf("all_reduce after shrinking: %d, %v", x[0], err)
		}
		if err := s.Finalize(ctx); err != nil {
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestMonitoredBarrierNamesAbsentRanks leaves two of six ranks out of a
// monitored barrier: every rank that calls it times out naming exactly
// those two, whichever of them it waited on directly.
func TestMonitoredBarrierNamesAbsentRanks(t *testing.T) {
	absent := []int{1, 4}
	timedOut := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(6 - len(absent))
	go func() { arrived.Wait(); close(timedOut) }()
	local(t, 6, func(ctx context.Context, c *gocomms.Comm) error {
		if slices.Contains(absent, c.Rank()) {
			<-timedOut // alive, but never calls the barrier
			return nil
		}
		err := c.MonitoredBarrier(ctx, 300*time.Millisecond)
		arrived.Done()
		if e := wantErr(err, gocomms.ErrTimeout, "monitored barrier"); e != nil {
			return e
		}
		var oe *gocomms.OpError
		errors.As(err, &oe)
		if !slices.Equal(oe.Ranks, absent) {
			return fmt.Errorf("monitored barrier error %q names %v, want %v", err, oe.Ranks, absent)
		}
		<-timedOut
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestAbortBeforeFirstOperation has the last rank abort before it does
// anything, at once or once a split child exists, while the others run
// their first collective: they fail naming it, well within their minute's
// timeout, whether or not a connection to it was ever made.
func TestAbortBeforeFirstOperation(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		for _, child := range []bool{false, true} {
			t.Run(fmt.Sprintf("ranks=%d/child=%v", n, child), func(t *testing.T) {
				dead := n - 1
				var survivors sync.WaitGroup
				survivors.Add(n - 1)
				local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
					comm := c
					if child {
						s, err := c.SplitByColor(ctx, 0, c.Rank())
						if err != nil {
							return err
						}
						comm = s
					}
					if c.Rank() == dead {
						comm.Abort(errors.New("simulated crash"))
						survivors.Wait()
						return c.Finalize(ctx)
					}
					err := comm.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
					survivors.Done()
					if e := wantErr(err, gocomms.ErrPeerFailed, "all_reduce with a rank gone"); e != nil {
						return e
					}
					var oe *gocomms.OpError
					if errors.As(err, &oe); !slices.Equal(oe.Ranks, []int{dead}) {
						return fmt.Errorf("all_reduce error %q names %v, want [%d]", err, oe.Ranks, dead)
					}
					comm.Abort(nil)
					if child {
						return c.Finalize(ctx)
					}
					return nil
				})
			})
		}
	}
}
