package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// ringExchange has every rank send to the next and receive from the one
// before, n messages each way per call: as a batch, or as separate async
// sends and receives with tags that cross (the receives posted in the
// other order), and checks what came.
func ringExchange(ctx context.Context, c *gocomms.Comm, round, n int, batch bool) error {
	p, r := c.Size(), c.Rank()
	next, prev := (r+1)%p, (r+p-1)%p
	outs := make([]*tensor.Tensor, n)
	ins := make([]*tensor.Tensor, n)
	for i := range n {
		outs[i] = mustTensor(tensor.Int64, i) // message 0 is empty
		for j := range i {
			outs[i].SetInt64(j, int64(1000*r+100*round+10*i+j))
		}
		ins[i] = mustTensor(tensor.Int64, i)
	}
	if batch {
		b := c.NewBatch()
		for i := range n {
			b.Send(outs[i], next, gocomms.Tag(i)).Recv(ins[i], prev, gocomms.Tag(i))
		}
		if err := b.IssueAsync().Wait(ctx); err != nil {
			return err
		}
	} else {
		var works []*gocomms.Work
		for i := range n {
			works = append(works, c.SendAsync(outs[i], next, gocomms.Tag(i)))
		}
		for i := n - 1; i >= 0; i-- {
			works = append(works, c.RecvAsync(ins[i], prev, gocomms.Tag(i)))
		}
		for _, w := range works {
			if err := w.Wait(ctx); err != nil {
				return err
			}
		}
	}
	for i := range n {
		for j := range i {
			if got, want := ins[i].Int64At(j), int64(1000*prev+100*round+10*i+j); got != want {
				return fmt.Errorf("rank %d, round %d, message %d, element %d: %d, want %d", r, round, i, j, got, want)
			}
		}
	}
	return nil
}

// TestPointToPointRunsOffTheActors runs rounds of ring exchanges, as
// pipeline stages pass activations: once the links are up and the turn
// lent, sends, receives and batches all run off the actors, queued behind
// each other, with the right data.
func TestPointToPointRunsOffTheActors(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		for _, batch := range []bool{true, false} {
			t.Run(fmt.Sprintf("ranks=%d/batch=%v", n, batch), func(t *testing.T) {
				local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
					if err := ringExchange(ctx, c, 0, 4, batch); err != nil {
						return err
					}
					if err := warmDirect(ctx, c); err != nil {
						return err
					}
					before := directOps(c)
					const rounds = 10
					for round := 1; round <= rounds; round++ {
						if err := ringExchange(ctx, c, round, 4, batch); err != nil {
							return err
						}
					}
					want := uint64(rounds) // one batch a round
					if !batch {
						want = rounds * 2 * 4 // a send and a receive per message
					}
					if ran := directOps(c) - before; ran != want {
						return fmt.Errorf("rank %d ran %d of %d point-to-point operations off the actors", c.Rank(), ran, want)
					}
					return nil
				})
			})
		}
	}
}

// TestQueuedReceiveTimesOut posts receives off the actors from a peer
// that never sends: each times out with ErrTimeout.
func TestQueuedReceiveTimesOut(t *testing.T) {
	var waited sync.WaitGroup
	waited.Add(1)
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if err := ringExchange(ctx, c, 0, 2, true); err != nil {
			return err
		}
		if err := warmDirect(ctx, c); err != nil {
			return err
		}
		if c.Rank() == 1 {
			waited.Wait()
			return nil
		}
		before := directOps(c)
		works := []*gocomms.Work{
			c.RecvAsync(mustTensor(tensor.Int64, 3), 1, gocomms.OpTimeout(200*time.Millisecond)),
			c.RecvAsync(mustTensor(tensor.Int64, 3), 1, gocomms.Tag(5), gocomms.OpTimeout(200*time.Millisecond)),
		}
		if ran := directOps(c) - before; ran != 2 {
			return fmt.Errorf("%d of the 2 receives ran off the actors", ran)
		}
		defer waited.Done()
		for i, w := range works {
			if err := w.Wait(ctx); !errors.Is(err, gocomms.ErrTimeout) {
				return fmt.Errorf("receive %d: got %v, want ErrTimeout", i, err)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, gocomms.ErrTimeout) {
		t.Fatal(err)
	}
}

// TestTagsBeyondTheLargest: the native backend refuses a tag above 2^30-1,
// whose frames would read as its own marks, before any byte moves, and
// carries the largest one; the communicator stays usable.
func TestTagsBeyondTheLargest(t *testing.T) {
	const largest = 1<<30 - 1
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		x := gocomms.FromSlice([]float32{float32(c.Rank() + 1)})
		for _, tag := range []int{largest + 1, 1 << 31, 1 << 40} {
			var err error
			if c.Rank() == 0 {
				err = c.Send(ctx, x, 1, gocomms.Tag(tag))
			} else {
				err = c.NewBatch().Recv(x, 0, gocomms.Tag(tag)).Issue(ctx)
			}
			if err := wantErr(err, gocomms.ErrInvalidArgument, fmt.Sprintf("tag %d", tag)); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			if err := c.Send(ctx, x, 1, gocomms.Tag(largest)); err != nil {
				return err
			}
		} else {
			if err := c.Recv(ctx, x, 0, gocomms.Tag(largest)); err != nil {
				return err
			}
			if got := x.Float64At(0); got != 1 {
				return fmt.Errorf("received %v under the largest tag, want 1", got)
			}
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestMessageSentBeforeFinalizeIsReceived: a rank sends, finalizes and
// is gone before its peer posts the receive; the message, which came
// before its goodbye, is received all the same, whether the receive runs
// on the actors or off them.
func TestMessageSentBeforeFinalizeIsReceived(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			gone := make(chan struct{})
			local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
				if warm {
					if err := warmDirect(ctx, c); err != nil {
						return err
					}
				}
				x := gocomms.FromSlice([]int64{0})
				if c.Rank() == 0 {
					x.SetInt64(0, 42)
					if err := c.Send(ctx, x, 1, gocomms.Tag(7)); err != nil {
						return err
					}
					err := c.Finalize(ctx)
					close(gone)
					return err
				}
				<-gone
				if err := c.Recv(ctx, x, 0, gocomms.Tag(7)); err != nil {
					return err
				}
				if got := x.Int64At(0); got != 42 {
					return fmt.Errorf("received %d, want 42", got)
				}
				return nil
			})
		})
	}
}
