package gocomms_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/engine"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/tcp/tcpproxy"
)

// TestAllReduceSurvivesConnectionResets runs all-reduces over real TCP
// through proxies that abort every connection, mid-transfer, a few times
// during the run: links reconnect, send again what the peer did not
// acknowledge, and every result is the plain loop's, none lost and none
// applied twice.
func TestAllReduceSurvivesConnectionResets(t *testing.T) {
	const ranks, iters, count = 4, 30, 1 << 18 // 1 MiB of float32: payloads are lent
	reg := prometheus.NewRegistry()
	before := counterValue(t, reg, "gocomms_link_reconnects_total")
	nw := tcpproxy.New(tcp.New())
	var progress, reset atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// Abort everything each time rank 0 reaches a few more
		// iterations: at most 4 times, inside the links' restart budget.
		for next := int64(3); next < iters && reset.Load() < 4; next += 6 {
			for progress.Load() < next {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
			if nw.Reset() > 0 {
				reset.Add(1)
			}
		}
	}()
	local(t, ranks, func(ctx context.Context, c *gocomms.Comm) error {
		x := make([]float32, count)
		for it := range iters {
			for i := range x {
				x[i] = float32((c.Rank()+1)*(it+1)) + float32(i%7)
			}
			if err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			for i, got := range x {
				// sum over r of (r+1)(it+1) + i%7
				want := float32(ranks*(ranks+1)/2*(it+1)) + float32(ranks*(i%7))
				if got != want {
					return fmt.Errorf("iteration %d: element %d = %v, want %v", it, i, got, want)
				}
			}
			if c.Rank() == 0 {
				progress.Store(int64(it + 1))
			}
		}
		return c.Finalize(ctx)
	}, gocomms.WithNetwork(nw), gocomms.WithMetrics(reg))
	if reset.Load() == 0 {
		t.Fatal("no connection was reset while the all-reduces ran")
	}
	if after := counterValue(t, reg, "gocomms_link_reconnects_total"); after <= before {
		t.Errorf("gocomms_link_reconnects_total went from %v to %v across %d resets", before, after, reset.Load())
	}
	t.Logf("connections reset %d times", reset.Load())
}

// counterValue gathers reg and returns the counter name's value, 0 where
// reg has none yet.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestPropertyOperationsSurviveResetsOffTheActors issues random sequences
// of all-reduces, ring exchanges as batches and as separate sends and
// receives, each blocking or async and waited at random points, over
// real TCP through proxies that reset every connection after a drawn
// step: the operations run off the actors, on the resumable
// connections, and every result is the reference's, in issue order,
// none lost and none applied twice. The connections are made before
// the steps, and reset once: a reset that lands in a connection's
// handshake reads as a refusal, the peer's process gone (FAULT-TOLERANCE.md).
func TestPropertyOperationsSurviveResetsOffTheActors(t *testing.T) {
	if testing.Short() {
		t.Skip("real TCP, with the links' backoffs: not in -short")
	}
	const (
		allReduce = iota
		batch
		sendRecv
	)
	type step struct {
		kind                int
		async, drain, reset bool
	}
	resumed, _ := engine.LinkStats()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 4).Draw(rt, "ranks")
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			return step{
				kind:  rapid.IntRange(allReduce, sendRecv).Draw(t, "kind"),
				async: rapid.Bool().Draw(t, "async"),
				drain: rapid.Bool().Draw(t, "drain"),
				reset: rapid.IntRange(0, 5).Draw(t, "reset") == 0,
			}
		}), 1, 16).Draw(rt, "steps")
		nw := tcpproxy.New(tcp.New())
		resets := 0
		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			r := c.Rank()
			next, prev := (r+1)%n, (r+n-1)%n
			xs := make([]*tensor.Tensor, len(steps))
			var pending []*gocomms.Work
			// Every connection the steps use, made: a ring exchange both
			// ways and an all-reduce; a second all-reduce ends on a rank
			// only once every rank has ended the first.
			warm := mustTensor(tensor.Int32, 1)
			if err := c.NewBatch().Send(warm, next, gocomms.Tag(1<<20)).Recv(mustTensor(tensor.Int32, 1), prev, gocomms.Tag(1<<20)).
				Send(warm, prev, gocomms.Tag(1<<21)).Recv(mustTensor(tensor.Int32, 1), next, gocomms.Tag(1<<21)).Issue(ctx); err != nil {
				return err
			}
			for range 2 {
				if err := c.AllReduce(ctx, warm, gocomms.Sum); err != nil {
					return err
				}
			}
			for i, s := range steps {
				x := stepInput(r, i)
				xs[i] = x
				var works []*gocomms.Work
				switch s.kind {
				case allReduce:
					works = append(works, c.AllReduceAsync(x, gocomms.Sum))
				case batch:
					xs[i] = mustTensor(tensor.Int32, 3)
					works = append(works, c.NewBatch().Send(x, next, gocomms.Tag(i)).Recv(xs[i], prev, gocomms.Tag(i)).IssueAsync())
				default:
					xs[i] = mustTensor(tensor.Int32, 3)
					works = append(works, c.SendAsync(x, next, gocomms.Tag(i)), c.RecvAsync(xs[i], prev, gocomms.Tag(i)))
				}
				if s.async {
					pending = append(pending, works...)
				} else {
					for _, w := range works {
						if err := w.Wait(ctx); err != nil {
							return fmt.Errorf("step %d %+v: %w", i, s, err)
						}
					}
				}
				if s.reset && r == 0 && resets == 0 {
					resets++
					nw.Reset()
				}
				if s.drain {
					if err := waitAll(ctx, &pending); err != nil {
						return err
					}
				}
			}
			if err := waitAll(ctx, &pending); err != nil {
				return err
			}
			for i, s := range steps {
				for j := range 3 {
					want := stepSum(n, i, j)
					if s.kind != allReduce {
						want = stepValue(prev, i, j)
					}
					if got := xs[i].Int64At(j); got != want {
						return fmt.Errorf("rank %d, step %d %+v, element %d: %d, want %d", r, i, s, j, got, want)
					}
				}
			}
			return nil
		}, gocomms.WithNetwork(nw))
		if err != nil {
			rt.Fatal(err)
		}
	})
	if now, _ := engine.LinkStats(); now == resumed {
		t.Fatal("no connection was reset and resumed")
	} else {
		t.Logf("connections resumed %d times", now-resumed)
	}
}
