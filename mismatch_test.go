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
// all-reduce that rank 0 runs and rank 2 calls only afterwards. Both others fail
// with ErrPeerCanceled naming rank 1, not with ErrInvalidArgument, which
// retry logic would read as their own bug.
func TestPeerCancellationIsItsOwnError(t *testing.T) {
	gate := newStartGate(2)
	cancelled := make(chan struct{})
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		switch c.Rank() {
		case 0:
			gate.arm(c, gocomms.OpAllReduce)
		case 1:
			gate.arm(c, gocomms.OpAllReduce)
			go func() {
				gate.wait(ctx) // ranks 0 and 1 are in the all-reduce
				cancel()
			}()
		case 2:
			select { // starts once rank 1 cancelled
			case <-cancelled:
			case <-ctx.Done():
			}
		}
		// On a ring, rank 1's later steps wait on rank 2's first: what it
		// holds back when it cancels, the others need.
		ring := gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: "ring"})
		err := c.AllReduce(cctx, gocomms.FromSlice([]float32{1, 2, 3, 4, 5, 6}), gocomms.Sum, ring)
		if c.Rank() == 1 {
			close(cancelled)
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
		name, says string              // says: what the error must say, parts split by |
		checked    string              // what it must say under WithCollectiveChecks
		all        bool                // every rank must fail, not only the deviants
		deviant    func(r, n int) bool // ranks that must fail; nil: the last
		call       func(ctx context.Context, c *gocomms.Comm) error
	}{
		{"broadcast_root_vs_all_reduce", "rank 0 called broadcast(root 0, 4 float32)|all_reduce(sum, 4 float32)", "rank 0 called broadcast(root 0, 4 float32)|called all_reduce(sum, 4 float32)", true, func(r, n int) bool { return r > 0 }, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 0 {
				return c.Broadcast(ctx, f32(4), 0)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"two_broadcast_roots", "root 1", "rank 1 called broadcast(root 1, 4 float32)|called broadcast(root 0, 4 float32)", false, func(r, n int) bool { return r == 1 }, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 1 {
				return c.Broadcast(ctx, f32(4), 1) // as rank 0 does with root 0
			}
			return c.Broadcast(ctx, f32(4), 0)
		}},
		{"broadcast_root", "root 1", "called broadcast(root 1, 4 float32)|called broadcast(root 0, 4 float32)", false, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.Broadcast(ctx, f32(4), 1)
			}
			return c.Broadcast(ctx, f32(4), 0)
		}},
		{"reduce_root", "root 1", "called reduce(sum, root 1, 4 float32)|called reduce(sum, root 0, 4 float32)", false, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.Reduce(ctx, f32(4), 1, gocomms.Sum)
			}
			return c.Reduce(ctx, f32(4), 0, gocomms.Sum)
		}},
		{"count", "all_reduce(sum, 8 float32)", "called all_reduce(sum, 8 float32)|called all_reduce(sum, 4 float32)", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.AllReduce(ctx, f32(8), gocomms.Sum)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"dtype", "float64", "called all_reduce(sum, 4 float64)|called all_reduce(sum, 4 float32)", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.AllReduce(ctx, gocomms.FromSlice(make([]float64, 4)), gocomms.Sum)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"reduce_op", "max", "called all_reduce(max, 4 float32)|called all_reduce(sum, 4 float32)", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
			if last(c) {
				return c.AllReduce(ctx, f32(4), gocomms.Max)
			}
			return c.AllReduce(ctx, f32(4), gocomms.Sum)
		}},
		{"all_to_all_v_splits", "sizes differ", "split sizes that disagree", false, func(r, n int) bool { return r == 0 || r == n-1 }, func(ctx context.Context, c *gocomms.Comm) error {
			// The last rank sends rank 0 three elements and expects one
			// back; rank 0 sends and expects two, as every other pair.
			n := c.Size()
			in, out := slices.Repeat([]int{2}, n), slices.Repeat([]int{2}, n)
			if last(c) {
				in[0], out[0] = 3, 1
			}
			return c.AllToAllV(ctx, f32(sum(out)), f32(sum(in)), out, in)
		}},
		{"all_gather_v_counts", "differ", "(float32, counts [1 2|(float32, counts [2 2", true, nil, func(ctx context.Context, c *gocomms.Comm) error {
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
		for _, checked := range []bool{false, true} {
			for _, n := range []int{2, 3, 5, 8} {
				t.Run(fmt.Sprintf("%s/checked=%v/%d_ranks", tc.name, checked, n), func(t *testing.T) {
					opts := []gocomms.Option{gocomms.WithTimeout(3 * time.Second), gocomms.WithFailureDetector(100*time.Millisecond, time.Second)}
					says := tc.says
					if checked {
						// Every rank fails, before any data moves, with
						// one message that lists every rank's call.
						opts = append(opts, gocomms.WithCollectiveChecks())
						says = tc.checked
					}
					errs := make([]error, n)
					var called sync.WaitGroup
					called.Add(n)
					err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
						errs[c.Rank()] = tc.call(ctx, c)
						called.Done()
						called.Wait() // a rank that left would fail its peers with ErrPeerFailed
						c.Finalize(ctx)
						return nil
					}, opts...)
					if err != nil {
						t.Fatal(err)
					}
					deviant := tc.deviant
					if deviant == nil {
						deviant = func(r, n int) bool { return r == n-1 }
					}
					for r, err := range errs {
						if err == nil && !checked && !tc.all && !deviant(r, n) {
							continue
						}
						if !errors.Is(err, gocomms.ErrInvalidArgument) || !saysAll(err, strings.Split(says, "|")) {
							t.Errorf("rank %d: got %v, want ErrInvalidArgument saying %q", r, err, says)
						}
						if detail := func(e error) string { _, d, _ := strings.Cut(e.Error(), "invalid argument: "); return d }; checked && err != nil && errs[0] != nil && detail(err) != detail(errs[0]) {
							t.Errorf("rank %d says %q, rank 0 %q: a checked mismatch reads the same everywhere", r, err, errs[0])
						}
					}
				})
			}
		}
	}
}

func sum(xs []int) (t int) {
	for _, x := range xs {
		t += x
	}
	return t
}

func saysAll(err error, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			return false
		}
	}
	return true
}

// TestExtraCollectiveNamesThePeerThatFinalized: the last rank calls one
// all-reduce more than the others, which finalize. Its extra call fails
// at once, as a mismatch naming a peer that finalized after one
// collective, not as a peer failure or a timeout. The first collective is
// an all-to-all, so that every pair of ranks has a link to say goodbye
// over: a peer that finalizes without ever having talked to this rank is
// known only to have closed the communicator.
func TestExtraCollectiveNamesThePeerThatFinalized(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("%d_ranks", n), func(t *testing.T) {
			var extra error
			err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
				if err := c.AllToAllSingle(ctx, gocomms.FromSlice(make([]float32, n)), gocomms.FromSlice(make([]float32, n))); err != nil {
					return err
				}
				if c.Rank() == n-1 {
					extra = c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.Sum)
				}
				c.Finalize(ctx)
				return nil
			}, gocomms.WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(extra, gocomms.ErrInvalidArgument) || !saysAll(extra, []string{"finalized with a part in 1 collectives", "collective #1 has no partner"}) {
				t.Errorf("the extra all-reduce: got %v, want ErrInvalidArgument naming a rank that finalized with a part in 1 collectives", extra)
			}
		})
	}
}
