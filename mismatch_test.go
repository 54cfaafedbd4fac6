package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// TestPeerCancellationIsItsOwnError: rank 1 cancels its context during an
// all-reduce that rank 0 runs and rank 2 has yet to call. Both others fail
// with ErrPeerCanceled naming rank 1, not with ErrInvalidArgument, which
// retry logic would read as their own bug.
func TestPeerCancellationIsItsOwnError(t *testing.T) {
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		switch c.Rank() {
		case 1:
			go func() { time.Sleep(30 * time.Millisecond); cancel() }()
		case 2:
			time.Sleep(100 * time.Millisecond) // starts once rank 1 cancelled
		}
		err := c.AllReduce(cctx, gocomms.FromSlice([]float32{1, 2, 3, 4}), gocomms.Sum)
		if c.Rank() == 1 {
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("cancelling rank: got %v", err)
			}
		} else {
			var oe *gocomms.OpError
			if !errors.Is(err, gocomms.ErrPeerCanceled) || errors.Is(err, gocomms.ErrInvalidArgument) || errors.Is(err, gocomms.ErrPeerFailed) ||
				!errors.As(err, &oe) || !slices.Equal(oe.Ranks, []int{1}) {
				return fmt.Errorf("rank %d: got %v, want ErrPeerCanceled naming rank 1", c.Rank(), err)
			}
		}
		if err := c.Barrier(ctx); err != nil { // the communicator is still usable
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestEveryMismatchFailsEveryRank: whatever the ranks disagree on, a rank
// whose call differs fails with ErrInvalidArgument naming the difference,
// never a hang (the short timeout would show as ErrTimeout) or a success:
// even a broadcast's root, which only sends, and two ranks that each think
// they are the root. Where every rank's result depends on the deviant's
// (all: an all-reduce, an all-gather) every rank fails so; where it does
// not (a rooted tree), a rank that heard only from peers that agree with
// it may complete, with the result its call asks for.
func TestEveryMismatchFailsEveryRank(t *testing.T) {
	f32 := func(n int) *gocomms.Tensor { return gocomms.FromSlice(make([]float32, n)) }
	last := func(c *gocomms.Comm) bool { return c.Rank() == c.Size()-1 }
	cases := []struct {
		name, says string           // says: what the error must say, parts split by |
		all        bool             // every rank must fail, not only the deviants
		deviant    func(r int) bool // ranks whose call differs from rank 0's; nil: the last
		call       func(ctx context.Context, c *gocomms.Comm) error
	}{
		{"broadcast_root_vs_all_reduce", "rank 0 called broadcast(root 0, 4 float32)|all_reduce(sum, 4 float32)", true, func(r int) bool { return r > 0 }, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 0 {
				return c.Broadcast(ctx, f32(4), 0)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"two_broadcast_roots", "root 1", false, func(r int) bool { return r == 1 }, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 1 {
				return c.Broadcast(ctx, f32(4), 1) // as rank 0 does with root 0
			}
			return c.Broadcast(ctx, f32(4), 0)
		}},
		{"broadcast_root", "root 1", false, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.Broadcast(ctx, f32(4), 1)
			}
			return c.Broadcast(ctx, f32(4), 0)
		}},
		{"reduce_root", "root 1", false, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.Reduce(ctx, f32(4), 1, gocomms.Sum)
			}
			return c.Reduce(ctx, f32(4), 0, gocomms.Sum)
		}},
		{"count", "all_reduce(sum, 8 float32)", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.AllReduce(ctx, f32(8), gocomms.Sum)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"dtype", "float64", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.AllReduce(ctx, gocomms.FromSlice(make([]float64, 4)), gocomms.Sum)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"reduce_op", "max", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.AllReduce(ctx, f32(4), gocomms.Max)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"all_gather_v_counts", "differ", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			outs := make([]*gocomms.Tensor, c.Size())
			for q := range outs {
				outs[q] = f32(1 + q)
			}
			if last(c) {
				outs[0] = f32(2) // rank 0 contributes one element
			}
			return c.AllGatherV(ctx, outs, outs[c.Rank()])
		}},
	}
	for _, tc := range cases {
		for _, n := range []int{2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/%d_ranks", tc.name, n), func(t *testing.T) {
				errs := make([]error, n)
				var called sync.WaitGroup
				called.Add(n)
				err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
					errs[c.Rank()] = tc.call(ctx, c)
					called.Done()
					called.Wait() // a rank that left would fail its peers with ErrPeerFailed
					c.Finalize(ctx)
					return nil
				}, gocomms.WithTimeout(3*time.Second), gocomms.WithFailureDetector(100*time.Millisecond, time.Second))
				if err != nil {
					t.Fatal(err)
				}
				deviant := tc.deviant
				if deviant == nil {
					deviant = func(r int) bool { return r == n-1 }
				}
				for r, err := range errs {
					if err == nil && !tc.all && !deviant(r) {
						continue
					}
					if !errors.Is(err, gocomms.ErrInvalidArgument) || !saysAll(err, strings.Split(tc.says, "|")) {
						t.Errorf("rank %d: got %v, want ErrInvalidArgument saying %q", r, err, tc.says)
					}
				}
			})
		}
	}
}

func saysAll(err error, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			return false
		}
	}
	return true
}
