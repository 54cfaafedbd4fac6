package gocomms_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

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
