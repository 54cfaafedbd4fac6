package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/tensor"
)

// The tests of this file run communicators over loopback, a backend
// registered from outside the module's packages (outoftree_backend_test.go):
// everything the public API offers must work over any backend.

// TestOutOfTreeSweep runs the reference checks of every collective, dtype,
// valid reduction and count over loopback, at every world size from 1 to
// 5, and checks that each collective was indeed issued.
func TestOutOfTreeSweep(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			runLoopback(t, n, func(ctx context.Context, c *gocomms.Comm) error {
				issued := map[gocomms.OpName]int{}
				c.RegisterIssueHook(func(op *gocomms.Op, _ *gocomms.Work) { issued[op.Name]++ })
				rep, err := commtest.Sweep(ctx, c, commtest.Plan{Counts: sweepCounts(n)})
				if err != nil {
					return err
				}
				if err := rep.Err(); err != nil {
					return err
				}
				// 14 collectives, send_recv and batch
				if tally := rep.Tally(); len(tally) != 17 {
					return fmt.Errorf("the sweep ran %d kinds of case, want 17: %v", len(tally), tally)
				}
				ops := []gocomms.OpName{gocomms.OpAllReduce, gocomms.OpReduce, gocomms.OpBroadcast,
					gocomms.OpAllGather, gocomms.OpAllGatherSingle, gocomms.OpAllGatherV,
					gocomms.OpReduceScatter, gocomms.OpReduceScatterSingle, gocomms.OpReduceScatterV,
					gocomms.OpAllToAll, gocomms.OpAllToAllSingle, gocomms.OpAllToAllV, gocomms.OpGather, gocomms.OpScatter}
				if n > 1 { // one rank has no peer to send to
					ops = append(ops, gocomms.OpSend, gocomms.OpRecv, gocomms.OpBatch)
				}
				for _, op := range ops {
					if issued[op] == 0 {
						return fmt.Errorf("the sweep issued no %s (issued %v)", op, issued)
					}
				}
				return nil
			})
		})
	}
}

// TestOutOfTreeBarrier checks that no rank leaves a barrier before every
// rank has entered it, a different rank coming last each round.
func TestOutOfTreeBarrier(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			var entered atomic.Int32
			// othersIn[round] closes once every rank but the round's last
			// has entered its barrier.
			othersIn := make([]chan struct{}, 4)
			for round := range othersIn {
				othersIn[round] = make(chan struct{})
			}
			runLoopback(t, n, func(ctx context.Context, c *gocomms.Comm) error {
				for round := 1; round <= 3; round++ {
					if n == 1 {
						entered.Add(1)
					} else if c.Rank() == round%n {
						<-othersIn[round]
						entered.Add(1)
					} else if entered.Add(1) == int32(round*n-1) {
						close(othersIn[round])
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					if got := int(entered.Load()); got < round*n {
						return fmt.Errorf("round %d: left the barrier after %d entries, want %d", round, got, round*n)
					}
				}
				return nil
			})
		})
	}
}

// TestOutOfTreeAsync issues every kind of operation in its async form
// before waiting for any: they run in issue order (each all-reduce reduces
// the last one's result), and each Work reports its end through Done, Wait,
// Err and Status.
func TestOutOfTreeAsync(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			runLoopback(t, n, func(ctx context.Context, c *gocomms.Comm) error {
				r := c.Rank()
				next, prev := (r+1)%n, (r+n-1)%n
				x := []int64{int64(r + 1), int64(10 * (r + 1))}
				gathered := make([]int64, 2*n)
				fromPrev, batched := []int32{-1}, []int32{-1}
				works := map[string]*gocomms.Work{
					"all_reduce 1": c.AllReduceAsync(gocomms.FromSlice(x), gocomms.Sum),
					"all_reduce 2": c.AllReduceAsync(gocomms.FromSlice(x), gocomms.Sum),
					"all_gather":   c.AllGatherSingleAsync(gocomms.FromSlice(gathered), gocomms.FromSlice(x)),
					"barrier":      c.BarrierAsync(),
				}
				if n > 1 {
					works["send"] = c.SendAsync(gocomms.FromSlice([]int32{int32(r)}), next, gocomms.Tag(7))
					works["recv"] = c.RecvAsync(gocomms.FromSlice(fromPrev), prev, gocomms.Tag(7))
					works["batch"] = c.NewBatch().Recv(gocomms.FromSlice(batched), next).Send(gocomms.FromSlice([]int32{int32(100 + r)}), prev).IssueAsync()
				}
				for what, w := range works {
					select {
					case <-w.Done():
					case <-ctx.Done():
						return fmt.Errorf("%s: %w", what, context.Cause(ctx))
					}
					if err := w.Wait(ctx); err != nil || w.Err() != nil || !w.IsCompleted() || w.Status() != gocomms.Completed {
						return fmt.Errorf("%s: Wait %v, Err %v, status %v", what, err, w.Err(), w.Status())
					}
				}
				s := int64(n * (n + 1) / 2) // sum of r+1 over ranks
				want := []int64{int64(n) * s, int64(n) * 10 * s}
				if !slices.Equal(x, want) {
					return fmt.Errorf("all-reduced twice: %v, want %v", x, want)
				}
				for q := range n {
					if got := gathered[2*q : 2*q+2]; !slices.Equal(got, want) {
						return fmt.Errorf("gathered block %d: %v, want %v", q, got, want)
					}
				}
				if n > 1 && (fromPrev[0] != int32(prev) || batched[0] != int32(100+next)) {
					return fmt.Errorf("received %d and %d in a batch, want %d and %d", fromPrev[0], batched[0], prev, 100+next)
				}
				return nil
			})
		})
	}
}

// TestOutOfTreeWorkWaitsForItsPeer checks that a receive stays pending
// until its peer sends, and that Finalize waits for it.
func TestOutOfTreeWorkWaitsForItsPeer(t *testing.T) {
	checked, finalizing := make(chan struct{}), make(chan struct{})
	runLoopback(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			<-checked
			<-finalizing
			return c.Send(ctx, gocomms.FromSlice([]float64{2.5}), 0)
		}
		var once sync.Once
		c.RegisterPreHook(func(op *gocomms.Op) error {
			if op.Name == gocomms.OpFinalize {
				once.Do(func() { close(finalizing) })
			}
			return nil
		})
		got := []float64{0}
		w := c.RecvAsync(gocomms.FromSlice(got), 1)
		select {
		case <-w.Done():
			close(checked)
			return fmt.Errorf("the receive ended before its peer sent: %v", w.Err())
		default:
		}
		waiting := w.Err() == nil && (w.Status() == gocomms.NotStarted || w.Status() == gocomms.InProgress)
		close(checked)
		if !waiting {
			return fmt.Errorf("a pending receive reports Err %v, status %v", w.Err(), w.Status())
		}
		if err := c.Finalize(ctx); err != nil {
			return err
		}
		if !w.IsCompleted() || got[0] != 2.5 {
			return fmt.Errorf("finalize returned with the receive %v, holding %v", w.Status(), got)
		}
		return nil
	})
}

// TestOutOfTreeHooksAndFlightRecord checks that hooks see every operation
// as it is issued, and that the flight recorder follows each to its end.
func TestOutOfTreeHooksAndFlightRecord(t *testing.T) {
	const n = 3
	runLoopback(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Backend() != loopbackName {
			return fmt.Errorf("backend %q, want %q", c.Backend(), loopbackName)
		}
		var pre, post []gocomms.OpName
		var seqs []uint64
		var works []*gocomms.Work
		c.RegisterPreHook(func(op *gocomms.Op) error {
			pre = append(pre, op.Name)
			return nil
		})
		c.RegisterIssueHook(func(op *gocomms.Op, w *gocomms.Work) {
			post, seqs, works = append(post, op.Name), append(seqs, op.Seq), append(works, w)
		})
		r := c.Rank()
		next, prev := (r+1)%n, (r+n-1)%n
		if err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1, 2}), gocomms.Max); err != nil {
			return err
		}
		if err := c.Broadcast(ctx, gocomms.FromSlice([]int16{int16(r)}), 2); err != nil {
			return err
		}
		if err := c.AllToAllSingle(ctx, gocomms.FromSlice(make([]uint8, n)), gocomms.FromSlice(make([]uint8, n))); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := c.Send(ctx, gocomms.FromSlice([]int32{1}), next); err != nil {
			return err
		}
		if err := c.Recv(ctx, gocomms.FromSlice([]int32{0}), prev); err != nil {
			return err
		}
		if err := c.NewBatch().Send(gocomms.FromSlice([]int32{1}), prev).Recv(gocomms.FromSlice([]int32{0}), next).Issue(ctx); err != nil {
			return err
		}

		want := []gocomms.OpName{gocomms.OpAllReduce, gocomms.OpBroadcast, gocomms.OpAllToAllSingle, gocomms.OpBarrier,
			gocomms.OpSend, gocomms.OpRecv, gocomms.OpBatch}
		if !slices.Equal(pre, want) || !slices.Equal(post, want) {
			return fmt.Errorf("pre-hooks saw %v, post-hooks %v, want %v", pre, post, want)
		}
		for i, w := range works {
			if seqs[i] != uint64(i) || !w.IsCompleted() {
				return fmt.Errorf("post-hook %d saw seq %d, work %v", i, seqs[i], w.Status())
			}
		}
		entries := c.FlightRecord()
		if len(entries) != len(want) {
			return fmt.Errorf("flight record has %d entries, want %d: %+v", len(entries), len(want), entries)
		}
		peers := map[gocomms.OpName][]int{gocomms.OpSend: {next}, gocomms.OpRecv: {prev}, gocomms.OpBatch: {prev, next}}
		for i, e := range entries {
			if e.Op != want[i] || e.Seq != uint64(i) || e.State != gocomms.FlightCompleted || e.Error != "" ||
				e.Started.IsZero() || e.Ended.Before(e.Started) || !slices.Equal(e.Peers, peers[e.Op]) {
				return fmt.Errorf("flight record entry %d: %+v, want %s #%d completed", i, e, want[i], i)
			}
		}
		return nil
	})
}

// wantOpError checks that err is an *OpError of c's operation op numbered
// seq, naming ranks, that wraps target.
func wantOpError(c *gocomms.Comm, err error, target error, op gocomms.OpName, seq uint64, ranks ...int) error {
	var oe *gocomms.OpError
	if !errors.Is(err, target) || !errors.As(err, &oe) {
		return fmt.Errorf("%s #%d: got %v, want an *OpError wrapping %v", op, seq, err, target)
	}
	if oe.Comm != c.Name() || oe.Op != string(op) || oe.Seq != seq || oe.Rank != c.Rank() || !slices.Equal(oe.Ranks, ranks) {
		return fmt.Errorf("got %+v, want comm %q, %s #%d on rank %d, ranks %v", oe, c.Name(), op, seq, c.Rank(), ranks)
	}
	return nil
}

// TestOutOfTreeErrors checks how operations fail over loopback: each with
// an *OpError naming the communicator, the operation and its sequence
// number, which Finalize reports again.
func TestOutOfTreeErrors(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		timedOut := make(chan struct{})
		runLoopback(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 1 {
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				<-timedOut // and never joins the all-reduce
				return nil
			}
			defer close(timedOut)
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			w := c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(50*time.Millisecond))
			if err := wantOpError(c, w.Wait(ctx), gocomms.ErrTimeout, gocomms.OpAllReduce, 1, 1); err != nil {
				return err
			}
			if w.Status() != gocomms.TimedOut {
				return fmt.Errorf("status %v, want %v", w.Status(), gocomms.TimedOut)
			}
			if e := c.FlightRecord()[1]; e.State != gocomms.FlightTimedOut || !slices.Equal(e.ErrorRanks, []int{1}) {
				return fmt.Errorf("flight record: %+v", e)
			}
			if err := c.Finalize(ctx); !errors.Is(err, gocomms.ErrTimeout) {
				return fmt.Errorf("finalize: got %v, want the timeout", err)
			}
			return nil
		})
	})

	t.Run("cancel", func(t *testing.T) {
		cancelled := make(chan struct{})
		runLoopback(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 1 {
				<-cancelled
				return nil
			}
			defer close(cancelled)
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(20*time.Millisecond, cancel)
			err := c.Gather(cctx, []*gocomms.Tensor{gocomms.FromSlice([]int8{0}), gocomms.FromSlice([]int8{0})}, gocomms.FromSlice([]int8{1}), 0)
			if err := wantOpError(c, err, context.Canceled, gocomms.OpGather, 0, 1); err != nil {
				return err
			}
			if err := c.Finalize(ctx); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("finalize: got %v, want the cancellation", err)
			}
			return nil
		})
	})

	t.Run("abort", func(t *testing.T) {
		issued := make(chan struct{})
		runLoopback(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 1 {
				w := c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum)
				close(issued)
				if err := wantOpError(c, w.Wait(ctx), gocomms.ErrPeerFailed, gocomms.OpAllReduce, 0, 0); err != nil {
					return err
				}
				// The next collective needs rank 0 too, and fails at once.
				if err := wantOpError(c, c.Barrier(ctx), gocomms.ErrPeerFailed, gocomms.OpBarrier, 1, 0); err != nil {
					return err
				}
				if err := c.Finalize(ctx); !errors.Is(err, gocomms.ErrPeerFailed) {
					return fmt.Errorf("finalize: got %v, want the failures", err)
				}
				return nil
			}
			<-issued
			w := c.RecvAsync(gocomms.FromSlice([]float32{0}), 1) // rank 1 never sends
			c.Abort(errors.New("operator said so"))
			if err := wantOpError(c, w.Wait(ctx), gocomms.ErrAborted, gocomms.OpRecv, 0); err != nil {
				return err
			}
			if !strings.Contains(w.Err().Error(), "operator said so") {
				return fmt.Errorf("%v does not give the abort's cause", w.Err())
			}
			return wantOpError(c, c.Barrier(ctx), gocomms.ErrAborted, gocomms.OpBarrier, 1)
		})
	})

	t.Run("mismatch", func(t *testing.T) {
		runLoopback(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
			x := gocomms.FromSlice([]float32{1})
			var err error
			if c.Rank() == 2 {
				err = c.Broadcast(ctx, x, 0)
				err = wantOpError(c, err, gocomms.ErrInvalidArgument, gocomms.OpBroadcast, 0)
			} else {
				err = c.AllReduce(ctx, x, gocomms.Sum)
				err = wantOpError(c, err, gocomms.ErrInvalidArgument, gocomms.OpAllReduce, 0)
			}
			if err != nil {
				return err
			}
			// The ranks are in step again.
			if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil || x.Float64At(0) != 3 {
				return fmt.Errorf("after the mismatch: %v, %v", err, x)
			}
			if err := c.Finalize(ctx); !errors.Is(err, gocomms.ErrInvalidArgument) {
				return fmt.Errorf("finalize: got %v, want the mismatch", err)
			}
			return nil
		})
	})

	t.Run("custom schedule", func(t *testing.T) {
		runLoopback(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
			one := []*gocomms.Tensor{gocomms.FromSlice(make([]int64, 2))}
			err := c.Custom(ctx, neighbourSum(c.Rank(), 3, 2), one, one, gocomms.Sum)
			if err := wantOpError(c, err, gocomms.ErrInvalidArgument, gocomms.OpCustom, 0); err != nil {
				return err
			}
			if err := c.Finalize(ctx); !errors.Is(err, gocomms.ErrInvalidArgument) {
				return fmt.Errorf("finalize: got %v, want the refusal", err)
			}
			return nil
		})
	})
}

// TestOutOfTreeSplit splits loopback communicators, which the front does
// over the parent's own collectives, and runs a collective in each group.
func TestOutOfTreeSplit(t *testing.T) {
	const n = 5
	runLoopback(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		r := c.Rank()
		child, err := c.SplitByColor(ctx, r%2, -r) // ranks in reverse order
		if err != nil {
			return err
		}
		var group []int
		for q := n - 1; q >= 0; q-- {
			if q%2 == r%2 {
				group = append(group, q)
			}
		}
		if child.Backend() != loopbackName || child.Size() != len(group) || !slices.Equal(child.Ranks(), group) {
			return fmt.Errorf("child of %s, %d ranks %v, want %d ranks %v", child.Backend(), child.Size(), child.Ranks(), len(group), group)
		}
		x := gocomms.FromSlice([]int64{int64(r)})
		if err := child.AllReduce(ctx, x, gocomms.Sum); err != nil {
			return err
		}
		want := int64(0)
		for _, q := range group {
			want += int64(q)
		}
		if x.Int64At(0) != want {
			return fmt.Errorf("group %v summed %d, want %d", group, x.Int64At(0), want)
		}
		return child.Finalize(ctx)
	})
}

// TestOutOfTreeRegistry checks what registering a backend promises: a
// name is taken once, and NewComm with a name nobody registered fails
// cleanly, listing those that are.
func TestOutOfTreeRegistry(t *testing.T) {
	if err := registerLoopback(); err != nil {
		t.Fatal(err)
	}
	if err := gocomms.RegisterBackend(loopbackName, newLoopback); !errors.Is(err, gocomms.ErrInvalidArgument) {
		t.Fatalf("registering %q twice: %v", loopbackName, err)
	}
	if !slices.Contains(gocomms.Backends(), loopbackName) {
		t.Fatalf("registered: %v", gocomms.Backends())
	}
	_, err := gocomms.NewComm(context.Background(), "no-such-backend", gocomms.CPU, "x", gocomms.WithRank(0), gocomms.WithSize(1))
	if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), `unknown backend "no-such-backend"`) ||
		!strings.Contains(err.Error(), loopbackName) {
		t.Fatalf("NewComm over an unknown backend: %v", err)
	}
	// The factory's own refusal comes back from NewComm too.
	_, err = gocomms.NewComm(context.Background(), loopbackName, tensor.CUDA(0), "x", gocomms.WithRank(0), gocomms.WithSize(1))
	if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), "loopback runs on cpu") {
		t.Fatalf("NewComm on an accelerator: %v", err)
	}
}

// refusing is a backend that fails every operation with a bare error,
// naming nothing: the front names the communicator, the operation and
// its number for it.
type refusing struct{}

var errRefusing = errors.New("refused by the backend")

func (refusing) Name() string { return "refusing" }
func (refusing) Issue(_ *gocomms.Op, done gocomms.Completion) func(error) {
	done.Finished(errRefusing)
	return nil
}
func (refusing) Split(context.Context, []int, *gocomms.Config, gocomms.Exchange) (gocomms.Backend, error) {
	return nil, errRefusing
}
func (refusing) Abort(error)                    {}
func (refusing) Finalize(context.Context) error { return nil }

// TestOutOfTreeBareErrorsAreNamed: an error a backend finishes an
// operation with reaches the caller as an *OpError naming the
// communicator, the operation and its sequence number, wrapping it.
func TestOutOfTreeBareErrorsAreNamed(t *testing.T) {
	if err := gocomms.RegisterBackend("refusing", func(context.Context, *gocomms.Config) (gocomms.Backend, error) { return refusing{}, nil }); err != nil && !errors.Is(err, gocomms.ErrInvalidArgument) {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := gocomms.NewComm(ctx, "refusing", gocomms.CPU, "bare", gocomms.WithRank(0), gocomms.WithSize(1))
	if err != nil {
		t.Fatal(err)
	}
	c.Barrier(ctx)
	err = c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum)
	var oe *gocomms.OpError
	if !errors.As(err, &oe) || !errors.Is(err, errRefusing) || oe.Comm != "bare" || oe.Op != string(gocomms.OpAllReduce) || oe.Seq != 1 {
		t.Fatalf("all-reduce over a refusing backend: %#v", err)
	}
	if err := c.Finalize(ctx); !errors.Is(err, errRefusing) {
		t.Fatalf("finalize after two refusals: %v", err)
	}
}
