package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	coll "github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/tensor"
)

// TestLargeMessageWaitsForItsReceiver: a 1 GiB send to a receiver that
// posts late waits at its sender. The receiver's memory grows by less
// than RendezvousMin meanwhile, where it held the whole message before;
// the sender's next operations run; its Work ends once the receive took
// the message, intact.
func TestLargeMessageWaitsForItsReceiver(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1 GiB")
	}
	const size = 1 << 30
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	bigs := []*tensor.Tensor{mustTensor(tensor.Uint8, size), mustTensor(tensor.Uint8, size)}
	for i, b := range bigs[0].Bytes() {
		bigs[0].Bytes()[i] = b + byte(i*7)
	}
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		big, word := bigs[c.Rank()], mustTensor(tensor.Int64, 1)
		var before uint64
		if c.Rank() == 1 {
			before = heap() // rank 0 sends nothing before the barrier
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 1 {
			// Sent after the large message: once it is here, so is the
			// large message's announcement.
			if err := c.Recv(ctx, word, 0, gocomms.Tag(1)); err != nil {
				return err
			}
			if grew := int64(heap()) - int64(before); grew > coll.RendezvousMin+64<<20 {
				return fmt.Errorf("the receiver's heap grew by %d MiB before it posted the receive", grew>>20)
			}
			if err := c.Send(ctx, word, 0, gocomms.Tag(2)); err != nil {
				return err
			}
			if err := c.Recv(ctx, word, 0, gocomms.Tag(3)); err != nil {
				return err
			}
			if err := c.Recv(ctx, big, 0); err != nil {
				return err
			}
			for i, b := range big.Bytes() {
				if b != byte(i*7) {
					return fmt.Errorf("byte %d of the message is %d, want %d", i, b, byte(i*7))
				}
			}
			return nil
		}
		w := c.SendAsync(big, 1)
		if err := c.Send(ctx, word, 1, gocomms.Tag(1)); err != nil {
			return err
		}
		if err := c.Recv(ctx, word, 1, gocomms.Tag(2)); err != nil {
			return err
		}
		if w.IsCompleted() {
			return fmt.Errorf("the large send completed before its receive was posted")
		}
		if err := c.Send(ctx, word, 1, gocomms.Tag(3)); err != nil {
			return err
		}
		return w.Wait(ctx)
	})
}

// TestLargeSendTimesOutWithoutItsReceive: a large message whose receive
// is never posted fails its send at the operation's timeout, naming the
// receiver, and the sender's next operations run meanwhile.
func TestLargeSendTimesOutWithoutItsReceive(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		word := mustTensor(tensor.Int64, 1)
		if c.Rank() == 1 {
			if err := c.Recv(ctx, word, 0, gocomms.Tag(1)); err != nil {
				return err
			}
			return c.Barrier(ctx)
		}
		w := c.SendAsync(mustTensor(tensor.Uint8, 2*coll.RendezvousMin), 1, gocomms.OpTimeout(200*time.Millisecond))
		if err := c.Send(ctx, word, 1, gocomms.Tag(1)); err != nil {
			return err
		}
		err := w.Wait(ctx)
		var opErr *gocomms.OpError
		if !errors.Is(err, gocomms.ErrTimeout) || !errors.As(err, &opErr) || !slices.Equal(opErr.Ranks, []int{1}) {
			return fmt.Errorf("the send ended with %v, want a timeout naming rank 1", err)
		}
		return c.Barrier(ctx)
	})
	// Finalize reports the send that failed.
	if err != nil && !errors.Is(err, gocomms.ErrTimeout) {
		t.Fatal(err)
	}
}

// TestLargeSendCancelled: a blocking large send whose context is
// cancelled before its receive is posted takes the message back, and
// ends with the cancellation. (A context's deadline is the operation's
// timeout instead, which TestLargeSendTimesOutWithoutItsReceive covers.)
func TestLargeSendCancelled(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			return c.Barrier(ctx)
		}
		cancelled, cancel := context.WithCancel(ctx)
		defer time.AfterFunc(50*time.Millisecond, cancel).Stop()
		if err := c.Send(cancelled, mustTensor(tensor.Uint8, 2*coll.RendezvousMin), 1); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("the send ended with %v, want its cancellation", err)
		}
		return c.Barrier(ctx)
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
