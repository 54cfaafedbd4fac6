package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
)

// local runs fn on n ranks and fails the test with every rank's error.
func local(t *testing.T, n int, fn func(ctx context.Context, c *gocomms.Comm) error, opts ...gocomms.Option) {
	t.Helper()
	if err := gocomms.RunLocal(context.Background(), n, fn, opts...); err != nil {
		t.Fatal(err)
	}
}

func wantErr(err error, target error, what string) error {
	if !errors.Is(err, target) {
		return fmt.Errorf("%s: got %v, want %v", what, err, target)
	}
	var oe *gocomms.OpError
	if !errors.As(err, &oe) {
		return fmt.Errorf("%s: %v is not an *OpError", what, err)
	}
	return nil
}

func TestInvalidArgumentsRejectedBeforeAnythingMoves(t *testing.T) {
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		f := gocomms.FromSlice([]float32{1, 2, 3})
		i := gocomms.FromSlice([]int32{1, 2, 3})
		cases := map[string]error{
			"bad root":            c.Broadcast(ctx, f, 3),
			"negative root":       c.Reduce(ctx, f, -1, gocomms.Sum),
			"send out of range":   c.Send(ctx, f, 7),
			"send to self":        c.Send(ctx, f, c.Rank()),
			"nil tensor":          c.AllReduce(ctx, nil, gocomms.Sum),
			"band on float":       c.AllReduce(ctx, f, gocomms.BAnd),
			"premul on int":       c.AllReduce(ctx, i, gocomms.PreMulSum(2)),
			"avg on bool":         c.AllReduce(ctx, gocomms.FromSlice([]bool{true}), gocomms.Avg),
			"shape mismatch":      c.AllGatherSingle(ctx, gocomms.FromSlice(make([]float32, 8)), f),
			"dtype mismatch":      c.AllGatherSingle(ctx, gocomms.FromSlice(make([]int32, 9)), f),
			"list length":         c.AllGather(ctx, []*gocomms.Tensor{f}, f),
			"splits too large":    c.AllToAllV(ctx, f, f, []int{1, 1, 2}, []int{1, 1, 1}),
			"empty batch":         c.NewBatch().Issue(ctx),
			"not divisible":       c.AllToAllSingle(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.FromSlice(make([]float32, 4))),
			"negative op timeout": c.Barrier(ctx, gocomms.OpTimeout(-time.Second)),
		}
		for what, err := range cases {
			if e := wantErr(err, gocomms.ErrInvalidArgument, what); e != nil {
				return e
			}
		}
		if got := []float32{1, 2, 3}; !slices.Equal(f.Bytes(), gocomms.FromSlice(got).Bytes()) {
			return fmt.Errorf("a rejected call changed its tensor")
		}
		return c.Barrier(ctx) // nothing was issued: the ranks are still in step
	})
}

func TestFinalizeRejectsLaterCalls(t *testing.T) {
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if err := c.AllReduce(ctx, gocomms.FromSlice([]int64{1}), gocomms.Sum); err != nil {
			return err
		}
		if err := c.Finalize(ctx); err != nil {
			return err
		}
		if err := wantErr(c.Barrier(ctx), gocomms.ErrFinalized, "barrier after finalize"); err != nil {
			return err
		}
		if err := wantErr(c.Finalize(ctx), gocomms.ErrFinalized, "second finalize"); err != nil {
			return err
		}
		return nil
	})
}

// finalizeExpectingFailures finalizes c, which must report failed work.
func finalizeExpectingFailures(ctx context.Context, c *gocomms.Comm) error {
	if err := c.Finalize(ctx); err == nil || !strings.Contains(err.Error(), "operations failed") {
		return fmt.Errorf("finalize after a failed operation: got %v", err)
	}
	return nil
}

// TestTimeoutNamesTheRankThatNeverCalled has one rank stay away from an
// all-reduce: every other rank times out, and its error names that rank
// even when it only waits for a neighbour stuck behind it.
func TestTimeoutNamesTheRankThatNeverCalled(t *testing.T) {
	for _, tc := range []struct {
		ranks, absent int
		algorithm     string
	}{
		{2, 1, "ring"},
		{5, 3, "ring"},
		{5, 0, "ring"},
		{6, 4, "recursive_doubling"},
	} {
		t.Run(fmt.Sprintf("%d_ranks_%s", tc.ranks, tc.algorithm), func(t *testing.T) {
			// Every rank keeps its links open until all have timed out, so
			// that none sees a peer go away instead.
			timedOut := make(chan struct{})
			var present sync.WaitGroup
			present.Add(tc.ranks - 1)
			go func() { present.Wait(); close(timedOut) }()
			err := gocomms.RunLocal(context.Background(), tc.ranks, func(ctx context.Context, c *gocomms.Comm) error {
				if c.Rank() == tc.absent {
					<-timedOut // alive, but never calls the collective
					return nil
				}
				err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum,
					gocomms.OpTimeout(200*time.Millisecond), gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: tc.algorithm}))
				present.Done()
				if e := wantErr(err, gocomms.ErrTimeout, "all_reduce"); e != nil {
					return e
				}
				var oe *gocomms.OpError
				errors.As(err, &oe)
				if !slices.Equal(oe.Ranks, []int{tc.absent}) || oe.Op != "all_reduce" || oe.Comm != "local" {
					return fmt.Errorf("timeout error %q names ranks %v, op %q, comm %q; want rank %d, all_reduce, local", err, oe.Ranks, oe.Op, oe.Comm, tc.absent)
				}
				<-timedOut
				return finalizeExpectingFailures(ctx, c)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMismatchedCallsFailOnEveryRank(t *testing.T) {
	cases := map[string]func(ctx context.Context, c *gocomms.Comm) error{
		"count": func(ctx context.Context, c *gocomms.Comm) error {
			return c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4+4*c.Rank())), gocomms.Sum)
		},
		"dtype": func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 2 {
				return c.AllReduce(ctx, gocomms.FromSlice(make([]float64, 4)), gocomms.Sum)
			}
			return c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.Sum)
		},
		"op": func(ctx context.Context, c *gocomms.Comm) error {
			if c.Rank() == 0 {
				return c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.Max)
			}
			return c.AllReduce(ctx, gocomms.FromSlice(make([]float32, 4)), gocomms.Sum)
		},
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			var failed atomic.Int32
			var called sync.WaitGroup
			called.Add(4)
			err := gocomms.RunLocal(context.Background(), 4, func(ctx context.Context, c *gocomms.Comm) error {
				err := call(ctx, c)
				called.Done()
				called.Wait() // keep every rank's connections up until all have their answer
				if e := wantErr(err, gocomms.ErrInvalidArgument, "mismatched "+name); e != nil {
					t.Errorf("rank %d: %v", c.Rank(), e)
				} else {
					failed.Add(1)
				}
				return finalizeExpectingFailures(ctx, c)
			}, gocomms.WithTimeout(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if failed.Load() != 4 {
				t.Fatalf("%d of 4 ranks saw the mismatch", failed.Load())
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	gate := newStartGate(1)
	cancelled := make(chan struct{})
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := c.AllReduce(done, gocomms.FromSlice([]float32{1}), gocomms.Sum); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("already cancelled: got %v", err)
		}
		// Cancelling mid-operation fails it on every rank. On a ring,
		// rank 0's later steps wait on the others: what it holds back
		// when it cancels, they need.
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ring := gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: "ring"})
		x := gocomms.FromSlice([]float32{1, 2, 3, 4, 5, 6})
		if c.Rank() == 0 {
			gate.arm(c, gocomms.OpAllReduce)
			go func() {
				gate.wait(ctx)
				cancel()
			}()
			err := c.AllReduce(cctx, x, gocomms.Sum, ring)
			close(cancelled)
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("cancelled mid-operation: got %v", err)
			}
		} else {
			<-cancelled // rank 0 cancels before the others call
			err := c.AllReduce(ctx, x, gocomms.Sum, ring)
			if !errors.Is(err, gocomms.ErrPeerCanceled) || errors.Is(err, gocomms.ErrInvalidArgument) || !errors.As(err, new(*gocomms.OpError)) {
				return fmt.Errorf("peer of a cancelled operation: got %v", err)
			}
		}
		if err := c.Barrier(ctx); err != nil { // the communicator is still usable
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

func TestAsyncPatterns(t *testing.T) {
	local(t, 4, func(ctx context.Context, c *gocomms.Comm) error {
		n := float32(c.Size())
		// async then Wait
		a := []float32{1, 2}
		w := c.AllReduceAsync(gocomms.FromSlice(a), gocomms.Sum)
		if err := w.Wait(ctx); err != nil || !w.IsCompleted() || w.Status() != gocomms.Completed {
			return fmt.Errorf("wait: %v, status %v", err, w.Status())
		}
		if !slices.Equal(a, []float32{n, 2 * n}) {
			return fmt.Errorf("async result %v", a)
		}
		// many in flight, issue order kept: each reads the previous result
		b := []float32{1}
		var works []*gocomms.Work
		for range 20 {
			works = append(works, c.AllReduceAsync(gocomms.FromSlice(b), gocomms.Sum))
		}
		for _, w := range works {
			if err := w.Wait(ctx); err != nil {
				return err
			}
		}
		if want := float32(math.Pow(float64(n), 20)); b[0] != want {
			return fmt.Errorf("20 chained all-reduces gave %v, want %v", b[0], want)
		}
		// dropped unwaited: the result still lands
		d := []float32{1}
		c.AllReduceAsync(gocomms.FromSlice(d), gocomms.Sum)
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if d[0] != n {
			return fmt.Errorf("dropped work result %v, want %v", d[0], n)
		}
		return nil
	})
}

func TestSplitAndMultiComm(t *testing.T) {
	local(t, 6, func(ctx context.Context, c *gocomms.Comm) error {
		r := c.Rank()
		// contiguous halves, listed in reverse so new ranks are reversed
		half := []int{2, 1, 0}
		if r >= 3 {
			half = []int{5, 4, 3}
		}
		h, err := c.Split(ctx, half)
		if err != nil {
			return err
		}
		if h.Size() != 3 || h.Rank() != slices.Index(half, r) || !slices.Equal(h.Ranks(), half) {
			return fmt.Errorf("split: rank %d size %d ranks %v", h.Rank(), h.Size(), h.Ranks())
		}
		// round-robin by color, keyed in reverse
		rr, err := c.SplitByColor(ctx, r%2, -r)
		if err != nil {
			return err
		}
		if rr.Size() != 3 || rr.Ranks()[0] != 4+r%2 {
			return fmt.Errorf("split by color: ranks %v", rr.Ranks())
		}
		// ranks not joining get nil
		only := []int{}
		if r < 2 {
			only = []int{0, 1}
		}
		pair, err := c.Split(ctx, only)
		if err != nil || (r < 2) != (pair != nil) {
			return fmt.Errorf("partial split: %v, %v", pair, err)
		}
		// every communicator at once, async, interleaved
		x, y, z := []int32{int32(r)}, []int32{int32(r)}, []int32{int32(r)}
		w1 := c.AllReduceAsync(gocomms.FromSlice(x), gocomms.Sum)
		w2 := h.AllReduceAsync(gocomms.FromSlice(y), gocomms.Sum)
		w3 := rr.AllReduceAsync(gocomms.FromSlice(z), gocomms.Max)
		for _, w := range []*gocomms.Work{w1, w2, w3} {
			if err := w.Wait(ctx); err != nil {
				return err
			}
		}
		wantH := int32(3)
		if r >= 3 {
			wantH = 12
		}
		if x[0] != 15 || y[0] != wantH || z[0] != int32(4+r%2) {
			return fmt.Errorf("multi-comm results %v %v %v", x, y, z)
		}
		// Finalize the children once every rank is done with them.
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		for _, s := range []*gocomms.Comm{h, rr, pair} {
			if s != nil {
				if err := s.Finalize(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func TestSplitRejectsBadGroupsOnEveryRank(t *testing.T) {
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		groups := map[string][]int{"without caller": {(c.Rank() + 1) % 3}, "duplicate": {c.Rank(), c.Rank()}, "out of range": {c.Rank(), 9}}
		for what, g := range groups {
			mine := g
			if c.Rank() != 0 {
				mine = []int{0, 1, 2} // only rank 0 passes the bad list; everyone must fail
			}
			if _, err := c.Split(ctx, mine); !errors.Is(err, gocomms.ErrInvalidArgument) {
				return fmt.Errorf("%s: got %v", what, err)
			}
		}
		return nil
	})
}

func TestHooks(t *testing.T) {
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		var pre, post []string
		var ids []uint64
		removePre := c.RegisterPreHook(func(op *gocomms.Op) error {
			pre = append(pre, string(op.Name))
			ids = append(ids, op.ID)
			return nil
		})
		c.RegisterIssueHook(func(op *gocomms.Op, w *gocomms.Work) { post = append(post, string(op.Name)) })
		if err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		removePre()
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if !slices.Equal(pre, []string{"all_reduce", "barrier"}) || len(post) != 3 || ids[1] <= ids[0] {
			return fmt.Errorf("pre %v post %v ids %v", pre, post, ids)
		}
		// NaN check rejects before anything moves, on the rank that holds it
		remove := c.RegisterPreHook(gocomms.NaNCheck)
		nan := []float32{1}
		if c.Rank() == 1 {
			nan[0] = float32(math.NaN())
			if err := wantErr(c.AllReduce(ctx, gocomms.FromSlice(nan), gocomms.Sum), gocomms.ErrInvalidArgument, "nan check"); err != nil {
				return err
			}
		}
		remove()
		// Work lifecycle hooks, in order
		var events []string
		w := c.BarrierAsync()
		w.OnWaitBegin(func(*gocomms.Work) { events = append(events, "wait-begin") })
		w.OnWaitEnd(func(*gocomms.Work) { events = append(events, "wait-end") })
		if err := w.Wait(ctx); err != nil {
			return err
		}
		w.OnEnd(func(*gocomms.Work) { events = append(events, "end") }) // already ended: runs at once
		w.OnStart(func(*gocomms.Work) { events = append(events, "start") })
		if !slices.Equal(events, []string{"wait-begin", "wait-end", "end", "start"}) {
			return fmt.Errorf("work hooks ran %v", events)
		}
		return nil
	})
}

func TestAbortFailsPendingWork(t *testing.T) {
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			return nil // never joins: rank 0's work stays pending until the abort
		}
		var hooked error
		c.RegisterAbortHook(func(err error) { hooked = err })
		w := c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum)
		c.Abort(errors.New("operator said so"))
		if err := wantErr(w.Wait(ctx), gocomms.ErrAborted, "pending work"); err != nil {
			return err
		}
		if !c.IsAborted() || !errors.Is(hooked, gocomms.ErrAborted) {
			return fmt.Errorf("aborted %v, hook saw %v", c.IsAborted(), hooked)
		}
		return wantErr(c.Barrier(ctx), gocomms.ErrAborted, "after abort")
	})
}

func TestUnknownBackendListsRegistered(t *testing.T) {
	_, err := gocomms.NewComm(context.Background(), "nccl", gocomms.CPU, "x", gocomms.WithRank(0), gocomms.WithSize(1))
	if !errors.Is(err, gocomms.ErrInvalidArgument) || !slices.Contains(gocomms.Backends(), "native") {
		t.Fatalf("got %v; registered %v", err, gocomms.Backends())
	}
	// Other tests register backends of their own.
	if want := `unknown backend "nccl" (registered: ` + strings.Join(gocomms.Backends(), ", ") + ")"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestFinalizeRightAfterSplitLosesNoFrames finalizes fresh splits as soon
// as their last collective returns: a rank that finishes first must still
// deliver the frames its peers wait for before its links close.
func TestFinalizeRightAfterSplitLosesNoFrames(t *testing.T) {
	for it := range 100 {
		n := 2 + it%7
		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			r := c.Rank()
			child, err := c.SplitByColor(ctx, r%3, r, gocomms.WithTimeout(5*time.Second))
			if err != nil {
				return err
			}
			x := gocomms.FromSlice([]int32{int32(r), 1, 2})
			if err := child.AllReduce(ctx, x, gocomms.Sum); err != nil {
				return err
			}
			return child.Finalize(ctx)
		})
		if err != nil {
			t.Fatalf("iteration %d (%d ranks): %v", it, n, err)
		}
	}
}

// TestPeerAbortBreaksTheCommunicator has one rank abort while the others
// wait in a collective: they fail at once, naming it, instead of timing
// out, and so does every later operation.
func TestPeerAbortBreaksTheCommunicator(t *testing.T) {
	aborted := make(chan struct{})
	gate := newStartGate(3)
	local(t, 4, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			gate.wait(ctx) // the others wait in the all-reduce
			c.Abort(errors.New("test abort"))
			close(aborted)
			return nil
		}
		gate.arm(c, gocomms.OpAllReduce)
		// Within the minute, or the error would be ErrTimeout.
		err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
		if e := wantErr(err, gocomms.ErrPeerFailed, "all_reduce"); e != nil {
			return e
		}
		var oe *gocomms.OpError
		errors.As(err, &oe)
		if !slices.Equal(oe.Ranks, []int{1}) {
			return fmt.Errorf("error %q names ranks %v, want [1]", err, oe.Ranks)
		}
		<-aborted
		if e := wantErr(c.Barrier(ctx), gocomms.ErrPeerFailed, "barrier after the failure"); e != nil {
			return e
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestFinalizeDoesNotWaitForBusyPeers finalizes one rank over TCP while
// its peer goes on working: the finalizing rank's last frames must reach
// the peer, and its Finalize must not wait for the peer to finish.
func TestFinalizeDoesNotWaitForBusyPeers(t *testing.T) {
	finalized := make(chan struct{})
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		x := gocomms.FromSlice(make([]float32, 1<<18)) // lent, not copied
		if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
			return err
		}
		if c.Rank() == 1 {
			// Busy elsewhere until the peer's Finalize returned, which
			// must not wait for this rank.
			select {
			case <-finalized:
			case <-time.After(time.Minute):
				return errors.New("the peer's Finalize waited for this busy rank")
			}
			return c.Finalize(ctx)
		}
		defer close(finalized)
		return c.Finalize(ctx)
	}, gocomms.WithNetwork(tcp.New()))
}

// countingNetwork counts dials, to show which communicators open
// connections of their own, and the collective frames its connections
// send, to show which schedule ran.
type countingNetwork struct {
	transport.Network
	dials, frames atomic.Int64
	// carrying counts the dialled connections that sent a frame: those
	// chosen for a pair of ranks. Two ranks that dial each other at once
	// both dial, and the loser may call Dial after the winner's
	// connection has carried a whole collective, but its connection is
	// dropped before it carries anything.
	carrying atomic.Int64
}

func (n *countingNetwork) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	n.dials.Add(1)
	c, err := n.Network.Dial(ctx, addr, hello)
	return &countingConn{Conn: c, frames: &n.frames, carrying: &n.carrying}, err
}

func (n *countingNetwork) Listen(addr string) (transport.Listener, error) {
	l, err := n.Network.Listen(addr)
	return countingListener{l, &n.frames}, err
}

type countingListener struct {
	transport.Listener
	frames *atomic.Int64
}

func (l countingListener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	c, hello, err := l.Listener.Accept(ctx)
	return &countingConn{Conn: c, frames: l.frames}, hello, err
}

type countingConn struct {
	transport.Conn
	frames   *atomic.Int64
	carrying *atomic.Int64 // a dialled connection's; nil for an accepted one
	sent     atomic.Bool
}

func (c *countingConn) Send(f transport.Frame) error {
	if c.carrying != nil && !c.sent.Swap(true) {
		c.carrying.Add(1)
	}
	// The layers between the engine and the transport flag a frame in
	// the Kind's high bits (direct, unnumbered, acknowledge now).
	if f.Header.Kind&0x1f == transport.Collective {
		c.frames.Add(1)
	}
	return c.Conn.Send(f)
}

// TestSplitsReuseConnections: splits talk over the connections their
// parent made, and those stay open until the last communicator sharing
// them finalizes, whichever finalizes first.
func TestSplitsReuseConnections(t *testing.T) {
	nw := &countingNetwork{Network: tcp.New()}
	const n = 4
	var connected sync.WaitGroup
	connected.Add(n)
	local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		// An all-to-all connects every pair of ranks.
		out := make([]int32, n)
		if err := c.AllToAllSingle(ctx, gocomms.FromSlice(out), gocomms.FromSlice(make([]int32, n))); err != nil {
			return err
		}
		connected.Done()
		connected.Wait()
		// Every pair's connection has carried its dialler's frame by now.
		carrying := nw.carrying.Load()
		half, err := c.SplitByColor(ctx, c.Rank()%2, 0)
		if err != nil {
			return err
		}
		x := []int32{int32(c.Rank())}
		if err := half.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
			return err
		}
		if want := int32(2 + 2*(c.Rank()%2)); x[0] != want {
			return fmt.Errorf("rank %d: all-reduce over its half gave %d, want %d", c.Rank(), x[0], want)
		}
		if more := nw.carrying.Load() - carrying; more != 0 {
			return fmt.Errorf("the split's all-reduce went over %d more connections", more)
		}
		// The parent finalizes first on even ranks, last on odd ones.
		order := []*gocomms.Comm{c, half}
		if c.Rank()%2 == 1 {
			order = []*gocomms.Comm{half, c}
		}
		for _, cc := range order {
			if err := cc.Barrier(ctx); err != nil {
				return err
			}
			if err := cc.Finalize(ctx); err != nil {
				return err
			}
		}
		return nil
	}, gocomms.WithNetwork(nw))
}

// TestEmptyPointToPoint issues batches in which rank 1's messages are
// all empty and the others' are not: rank 1's batch is point-to-point
// messages too, not a collective, which would number itself among the
// collectives on rank 1 alone, and the all-reduces between them pair on
// every rank.
func TestEmptyPointToPoint(t *testing.T) {
	const ranks = 3
	local(t, ranks, func(ctx context.Context, c *gocomms.Comm) error {
		r := c.Rank()
		for i := range 3 {
			b := c.NewBatch()
			got := make([]int32, ranks)
			for q := range ranks {
				if q == r {
					continue
				}
				n := 1
				if q == 1 || r == 1 {
					n = 0
				}
				b.Send(gocomms.FromSlice([]int32{int32(10*r + i)}[:n]), q).Recv(gocomms.FromSlice(got[q:q+n]), q)
			}
			if err := b.Issue(ctx); err != nil {
				return err
			}
			if r != 1 {
				if q := 2 - r; got[q] != int32(10*q+i) {
					return fmt.Errorf("rank %d, round %d: received %d from rank %d, want %d", r, i, got[q], q, 10*q+i)
				}
			}
			x := gocomms.FromSlice([]int32{int32(r)})
			if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
				return err
			}
			if got := x.Int64At(0); got != 0+1+2 {
				return fmt.Errorf("rank %d, round %d: all-reduce gave %d, want 3", r, i, got)
			}
		}
		return nil
	}, gocomms.WithTimeout(10*time.Second))
}

// startGate lets a rank of a local job act once other ranks have started
// an operation, so that they are waiting in it, for instance on the rank
// about to fail.
type startGate struct{ started sync.WaitGroup }

// newStartGate is a gate that opens once ranks ranks have started.
func newStartGate(ranks int) *startGate {
	g := &startGate{}
	g.started.Add(ranks)
	return g
}

// arm, called by each rank the gate waits for before it issues the
// operation, counts the rank started once its next operation named op
// starts.
func (g *startGate) arm(c *gocomms.Comm, op gocomms.OpName) {
	var once sync.Once
	c.RegisterIssueHook(func(o *gocomms.Op, w *gocomms.Work) {
		if o.Name == op {
			w.OnStart(func(*gocomms.Work) { once.Do(g.started.Done) })
		}
	})
}

// wait returns once every rank's operation has started, or ctx is done.
func (g *startGate) wait(ctx context.Context) {
	open := make(chan struct{})
	go func() {
		g.started.Wait()
		close(open)
	}()
	select {
	case <-open:
	case <-ctx.Done():
	}
}
