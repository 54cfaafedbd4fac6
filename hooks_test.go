package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gocomms/gocomms"
)

// TestHooksSeeSplitsFinalizeAndWindows: splits, a window's creation, its
// operations and Close, and Finalize reach the pre-hooks and the issue
// hooks, each issue hook's Work ending with the operation; what the
// communicator issues for itself does not.
func TestHooksSeeSplitsFinalizeAndWindows(t *testing.T) {
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		var mu sync.Mutex
		var pre, issued []string
		var works []*gocomms.Work
		c.RegisterPreHook(func(op *gocomms.Op) error {
			mu.Lock()
			defer mu.Unlock()
			pre = append(pre, string(op.Name))
			return nil
		})
		c.RegisterIssueHook(func(op *gocomms.Op, w *gocomms.Work) {
			mu.Lock()
			defer mu.Unlock()
			issued = append(issued, string(op.Name))
			works = append(works, w)
		})
		half, err := c.SplitByColor(ctx, c.Rank()%2, 0)
		if err != nil {
			return err
		}
		all, err := c.Split(ctx, []int{0, 1, 2})
		if err != nil {
			return err
		}
		win, err := c.NewWindow(ctx, 64)
		if err != nil {
			return err
		}
		if err := win.Accumulate(ctx, gocomms.FromSlice([]int64{1}), (c.Rank()+1)%3, 0, gocomms.Sum); err != nil {
			return err
		}
		if err := win.Close(ctx); err != nil {
			return err
		}
		if err := errors.Join(half.Finalize(ctx), all.Finalize(ctx)); err != nil {
			return err
		}
		if err := c.Finalize(ctx); err != nil {
			return err
		}
		want := []string{"split", "split", "new_window", "window_accumulate", "window_close", "finalize"}
		mu.Lock()
		defer mu.Unlock()
		// Creation and Close meet in barriers, and Close flushes: those are
		// seen as themselves.
		steps := func(s string) bool { return s == "barrier" || s == "window_flush" }
		if !slices.Equal(slices.DeleteFunc(slices.Clone(issued), steps), want) || !slices.Equal(slices.DeleteFunc(slices.Clone(pre), steps), want) {
			return fmt.Errorf("rank %d: pre-hooks saw %v, issue hooks %v, want %v", c.Rank(), pre, issued, want)
		}
		for i, w := range works {
			if !w.IsCompleted() {
				return fmt.Errorf("rank %d: the Work of %s is %v", c.Rank(), issued[i], w.Status())
			}
		}
		return nil
	})
}

// TestPreHookRejectsSplitEverywhere: a pre-hook that rejects a split on
// one rank fails it on every rank, at once.
func TestPreHookRejectsSplitEverywhere(t *testing.T) {
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			c.RegisterPreHook(func(op *gocomms.Op) error {
				if op.Name == gocomms.OpSplit {
					return gocomms.ErrInvalidArgument
				}
				return nil
			})
		}
		if _, err := c.Split(ctx, []int{0, 1, 2}); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("rank %d: split: %v", c.Rank(), err)
		}
		if _, err := c.SplitByColor(ctx, 0, 0); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("rank %d: split by color: %v", c.Rank(), err)
		}
		return c.Barrier(ctx)
	})
}

// TestGatherSingleInvalid: an output of the wrong size is refused on the
// root, before anything moves; the others' outputs are not read.
func TestGatherSingleInvalid(t *testing.T) {
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 0 {
			err := c.GatherSingle(ctx, gocomms.FromSlice(make([]int32, 3)), gocomms.FromSlice([]int32{1}), 0)
			if e := wantErr(err, gocomms.ErrInvalidArgument, "gather_single into 3 elements"); e != nil {
				return e
			}
		}
		out := gocomms.FromSlice(make([]int32, 2))
		if err := c.GatherSingleAsync(out, gocomms.FromSlice([]int32{int32(c.Rank() + 5)}), 1).Wait(ctx); err != nil {
			return err
		}
		if got, _ := gocomms.As[int32](out); c.Rank() == 1 && !slices.Equal(got, []int32{5, 6}) {
			return fmt.Errorf("gathered %v", got)
		}
		return nil
	})
}
