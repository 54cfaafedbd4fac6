package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
