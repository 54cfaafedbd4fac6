package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// directOps counts the collectives c's backend ran off its actors.
func directOps(c *gocomms.Comm) uint64 {
	d, ok := c.UnsafeBackend().(interface{ DirectOps() uint64 })
	if !ok {
		return 0
	}
	return d.DirectOps()
}

// TestCollectivesRunOffTheActors checks that a loop of blocking
// collectives over lossless connections runs off the actors once the
// links are up, with the right results.
func TestCollectivesRunOffTheActors(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
				x := mustTensor(tensor.Int64, 7)
				for i := range 20 {
					for j := range 7 {
						x.SetInt64(j, int64((c.Rank()+1)*(i+j+1)))
					}
					if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
						return err
					}
					for j := range 7 {
						if got, want := x.Int64At(j), int64((i+j+1)*n*(n+1)/2); got != want {
							return fmt.Errorf("rank %d, op %d, element %d: %d, want %d", c.Rank(), i, j, got, want)
						}
					}
				}
				if ops := directOps(c); ops < 10 {
					return fmt.Errorf("rank %d ran %d of 20 all-reduces off the actors", c.Rank(), ops)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// stepValue is element j of rank r's input to step i of the property
// tests' sequences: which rank, step and element it came from shows in
// it.
func stepValue(r, i, j int) int64 { return int64((r+1)*100 + i*10 + j) }

// stepInput returns rank r's input to step i: 3 elements of stepValue.
func stepInput(r, i int) *tensor.Tensor {
	x := mustTensor(tensor.Int32, 3)
	for j := range 3 {
		x.SetInt64(j, stepValue(r, i, j))
	}
	return x
}

// stepSum is element j of step i's all-reduce over n ranks.
func stepSum(n, i, j int) int64 { return int64(n*(n+1)/2*100 + n*(i*10+j)) }

// waitAll waits for every Work of *pending, and empties it.
func waitAll(ctx context.Context, pending *[]*gocomms.Work) error {
	for _, w := range *pending {
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
	*pending = (*pending)[:0]
	return nil
}

// TestPropertyDirectAndActorOperationsInterleave issues random sequences
// of all-reduces, broadcasts and ring exchanges (a batch sending to the
// next rank and receiving from the one before), each blocking or async,
// waiting for the async ones at random points: whichever run off the
// actors and whichever on them meet across ranks, and every result must
// be the reference's, in issue order.
func TestPropertyDirectAndActorOperationsInterleave(t *testing.T) {
	const (
		allReduce = iota
		broadcast
		exchange
	)
	type step struct {
		kind         int
		async, drain bool
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(rt, "ranks")
		kinds := rapid.IntRange(allReduce, exchange)
		if n == 1 {
			kinds = rapid.IntRange(allReduce, broadcast) // a rank has no other to exchange with
		}
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			return step{kinds.Draw(t, "kind"), rapid.Bool().Draw(t, "async"), rapid.Bool().Draw(t, "drain")}
		}), 1, 24).Draw(rt, "steps")
		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			r := c.Rank()
			prev := (r + n - 1) % n
			xs := make([]*tensor.Tensor, len(steps))
			var pending []*gocomms.Work
			for i, s := range steps {
				x := stepInput(r, i)
				xs[i] = x
				var batch *gocomms.Batch
				if s.kind == exchange {
					xs[i] = mustTensor(tensor.Int32, 3)
					batch = c.NewBatch().Send(x, (r+1)%n, gocomms.Tag(i)).Recv(xs[i], prev, gocomms.Tag(i))
				}
				switch {
				case s.async && s.kind == allReduce:
					pending = append(pending, c.AllReduceAsync(x, gocomms.Sum))
				case s.async && s.kind == broadcast:
					pending = append(pending, c.BroadcastAsync(x, i%n))
				case s.async:
					pending = append(pending, batch.IssueAsync())
				default:
					var err error
					switch s.kind {
					case allReduce:
						err = c.AllReduce(ctx, x, gocomms.Sum)
					case broadcast:
						err = c.Broadcast(ctx, x, i%n)
					default:
						err = batch.Issue(ctx)
					}
					if err != nil {
						return err
					}
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
					switch s.kind {
					case broadcast:
						want = stepValue(i%n, i, j)
					case exchange:
						want = stepValue(prev, i, j)
					}
					if got := xs[i].Int64At(j); got != want {
						return fmt.Errorf("rank %d, step %d %+v, element %d: %d, want %d", r, i, s, j, got, want)
					}
				}
			}
			return nil
		})
		if err != nil {
			rt.Fatal(err)
		}
	})
}

// TestAbortWakesAnOperationOffTheActors checks that Abort, from another
// goroutine, ends at once a collective that runs off the actors and waits
// for a peer that never comes.
func TestAbortWakesAnOperationOffTheActors(t *testing.T) {
	done := make(chan struct{})
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		x := mustTensor(tensor.Float32, 4)
		for range 5 {
			if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
				return err
			}
		}
		if c.Rank() == 1 {
			<-done // sits the next one out
			return nil
		}
		defer close(done)
		before := directOps(c)
		ended := make(chan error, 1)
		go func() { ended <- c.AllReduce(ctx, x, gocomms.Sum, gocomms.OpTimeout(time.Minute)) }()
		// It starts off the actors at once, or the actors have it.
		for wait := time.Now(); directOps(c) == before; time.Sleep(time.Millisecond) {
			if time.Since(wait) > time.Minute {
				return errors.New("the all-reduce did not run off the actors")
			}
		}
		c.Abort(errors.New("test aborts"))
		select {
		case err := <-ended:
			if !errors.Is(err, gocomms.ErrAborted) {
				return fmt.Errorf("all-reduce ended with %v, want ErrAborted", err)
			}
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("abort did not end the all-reduce")
		}
	})
	if err != nil && !errors.Is(err, gocomms.ErrAborted) {
		t.Fatal(err)
	}
}

func mustTensor(dt tensor.DType, n int) *tensor.Tensor {
	t, err := tensor.New(dt, n)
	if err != nil {
		panic(err)
	}
	return t
}
