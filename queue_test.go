package gocomms_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// warmDirect runs blocking all-reduces until every rank ran the one
// before the last off the actors: its links are up and its turn lent,
// and an operation that ends off the actors leaves it lent, so the last
// ran there too, and the next will. (One that ends on the actors may
// return before its rank lends the turn again.) Every rank runs as many.
func warmDirect(ctx context.Context, c *gocomms.Comm) error {
	lastDirect := false
	for range 100 {
		notYet := int64(1)
		if lastDirect {
			notYet = 0
		}
		before := directOps(c)
		x := gocomms.FromSlice([]int64{notYet})
		if err := c.AllReduce(ctx, x, gocomms.Max); err != nil {
			return err
		}
		lastDirect = directOps(c) > before
		if x.Int64At(0) == 0 {
			return nil
		}
	}
	return fmt.Errorf("rank %d: no all-reduce ran off the actors in 100", c.Rank())
}

// TestQueuedCollectivesRunOffTheActors issues bursts of async
// collectives, as a training loop issues its gradient buckets. The first
// connects the links its collectives need; in the second, once the turn
// is lent, every one queues off the actors behind the one running, in
// issue order, with the right results.
func TestQueuedCollectivesRunOffTheActors(t *testing.T) {
	const burst = 40
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
				if err := asyncBurst(ctx, c, burst); err != nil {
					return err
				}
				if err := warmDirect(ctx, c); err != nil {
					return err
				}
				before := directOps(c)
				if err := asyncBurst(ctx, c, burst); err != nil {
					return err
				}
				if ran := directOps(c) - before; ran != burst {
					return fmt.Errorf("rank %d ran %d of %d queued collectives off the actors", c.Rank(), ran, burst)
				}
				return nil
			})
		})
	}
}

// asyncBurst issues n async all-reduces and broadcasts, then waits for
// them and checks their results.
func asyncBurst(ctx context.Context, c *gocomms.Comm, n int) error {
	p := c.Size()
	xs := make([]*tensor.Tensor, n)
	works := make([]*gocomms.Work, n)
	for i := range n {
		// Odd ones broadcast the result of the one before: issue order
		// is run order.
		if i%2 == 0 {
			xs[i] = mustTensor(tensor.Int64, i+1)
			for j := range i + 1 {
				xs[i].SetInt64(j, int64((c.Rank()+1)*(i+j)))
			}
			works[i] = c.AllReduceAsync(xs[i], gocomms.Sum)
		} else {
			xs[i] = xs[i-1]
			works[i] = c.BroadcastAsync(xs[i], i%p)
		}
	}
	for i, w := range works {
		if err := w.Wait(ctx); err != nil {
			return fmt.Errorf("rank %d, op %d: %w", c.Rank(), i, err)
		}
	}
	for i := 0; i < n; i += 2 {
		for j := range i + 1 {
			if got, want := xs[i].Int64At(j), int64(p*(p+1)/2*(i+j)); got != want {
				return fmt.Errorf("rank %d, op %d, element %d: %d, want %d", c.Rank(), i, j, got, want)
			}
		}
	}
	return nil
}

// TestCancelAQueuedCollective cancels a blocking all-reduce queued off
// the actors behind an async one that waits for a peer: the canceled one
// ends at once, the one ahead of it still runs, and the peer's matching
// call fails with ErrPeerCanceled.
func TestCancelAQueuedCollective(t *testing.T) {
	canceled := make(chan struct{})
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if err := warmDirect(ctx, c); err != nil {
			return err
		}
		a := gocomms.FromSlice([]float32{float32(c.Rank() + 1)})
		b := gocomms.FromSlice([]float32{1})
		if c.Rank() == 1 {
			<-canceled // rank 0's second all-reduce ended
			if err := c.AllReduce(ctx, a, gocomms.Sum); err != nil {
				return err
			}
			if err := c.AllReduce(ctx, b, gocomms.Sum); !errors.Is(err, gocomms.ErrPeerCanceled) {
				return fmt.Errorf("rank 1's canceled all-reduce: got %v, want ErrPeerCanceled", err)
			}
		} else {
			before := directOps(c)
			wa := c.AllReduceAsync(a, gocomms.Sum) // waits for rank 1
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			remove := c.RegisterIssueHook(func(op *gocomms.Op, _ *gocomms.Work) { cancel() })
			err := c.AllReduce(cctx, b, gocomms.Sum)
			remove()
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("canceled all-reduce: got %v", err)
			}
			if ran := directOps(c) - before; ran != 2 {
				return fmt.Errorf("%d of the 2 all-reduces ran off the actors", ran)
			}
			select {
			case <-wa.Done():
				return fmt.Errorf("the all-reduce ahead ended before its peer called it: %v", wa.Err())
			default:
			}
			close(canceled)
			if err := wa.Wait(ctx); err != nil {
				return err
			}
		}
		if got := a.Float64At(0); got != 3 {
			return fmt.Errorf("rank %d: the all-reduce ahead of the canceled one gave %v, want 3", c.Rank(), got)
		}
		if err := c.Barrier(ctx); err != nil { // the communicator is still usable
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestAbortEndsQueuedCollectives aborts a rank whose async all-reduces
// queue off the actors behind one that waits for a peer: every one ends
// with ErrAborted.
func TestAbortEndsQueuedCollectives(t *testing.T) {
	aborted := make(chan struct{})
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if err := warmDirect(ctx, c); err != nil {
			return err
		}
		if c.Rank() == 1 {
			<-aborted // sits the rest out
			return nil
		}
		defer close(aborted)
		before := directOps(c)
		works := make([]*gocomms.Work, 3)
		for i := range works {
			works[i] = c.AllReduceAsync(mustTensor(tensor.Float64, 4), gocomms.Sum, gocomms.OpTimeout(time.Hour))
		}
		if ran := directOps(c) - before; ran != 3 {
			return fmt.Errorf("%d of the 3 all-reduces ran off the actors", ran)
		}
		c.Abort(errors.New("test aborts"))
		for i, w := range works {
			select {
			case <-w.Done():
			case <-time.After(time.Minute):
				return fmt.Errorf("all-reduce %d did not end on Abort", i)
			}
			if !errors.Is(w.Err(), gocomms.ErrAborted) {
				return fmt.Errorf("all-reduce %d: got %v, want ErrAborted", i, w.Err())
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, gocomms.ErrAborted) {
		t.Fatal(err)
	}
}

// TestQueuedCollectivesTimeOutNamingTheAbsentRank queues async
// all-reduces off the actors that a peer never joins: the first times
// out, and goes to the actors with those behind it, which find whom it
// waits for; each names that peer.
func TestQueuedCollectivesTimeOutNamingTheAbsentRank(t *testing.T) {
	var waited sync.WaitGroup // ranks 0 and 1 saw every timeout
	waited.Add(2)
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		if err := warmDirect(ctx, c); err != nil {
			return err
		}
		if c.Rank() == 2 {
			waited.Wait()
			return nil
		}
		works := make([]*gocomms.Work, 3)
		for i := range works {
			works[i] = c.AllReduceAsync(mustTensor(tensor.Int32, 5), gocomms.Sum, gocomms.OpTimeout(300*time.Millisecond))
		}
		var failed error
		for i, w := range works {
			err := w.Wait(ctx)
			var oe *gocomms.OpError
			switch {
			case !errors.Is(err, gocomms.ErrTimeout) || !errors.As(err, &oe):
				failed = cmp.Or(failed, fmt.Errorf("rank %d, all-reduce %d: got %v, want a timeout", c.Rank(), i, err))
			case !slices.Contains(oe.Ranks, 2):
				failed = cmp.Or(failed, fmt.Errorf("rank %d, all-reduce %d: %v does not name rank 2", c.Rank(), i, err))
			}
		}
		waited.Done()
		waited.Wait() // neither finalizes under the other's wait
		return cmp.Or(failed, finalizeExpectingFailures(ctx, c))
	})
	if err != nil {
		t.Fatal(err)
	}
}
