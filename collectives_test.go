package gocomms_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
)

// worldSizes are the sweep's communicator sizes: 1 to 9 and 16, fewer under
// -short (which the race run uses).
func worldSizes() []int {
	if testing.Short() {
		return []int{1, 2, 3, 5, 8}
	}
	return []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16}
}

// sweepCounts are 0, 1, fewer than the ranks, and odd.
func sweepCounts(n int) []int {
	cs := []int{0, 1, n - 1, 2*n + 1}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// sweep runs plan on n in-process ranks, configured by opts, and fails t
// with every rank's wrong results.
func sweep(t *testing.T, n int, plan commtest.Plan, opts ...gocomms.Option) {
	t.Helper()
	err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
		rep, err := commtest.Sweep(ctx, c, plan)
		if err != nil {
			return err
		}
		return rep.Err()
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
}

// TestCollectivesSweep checks every collective × dtype × valid op × count
// against the reference, at every world size.
func TestCollectivesSweep(t *testing.T) {
	for _, n := range worldSizes() {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			sweep(t, n, commtest.Plan{Counts: sweepCounts(n)})
		})
	}
}

// TestCollectivesAtScale runs every collective on 128 ranks in the
// dtypes whose reductions leave their range there (a uint8 sum wraps
// before its average divides it, a float16 product overflows): the
// reference holds at any size.
func TestCollectivesAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("128 ranks run in the full (non-short) test run")
	}
	sweep(t, 128, commtest.Plan{DTypes: []gocomms.DType{gocomms.Uint8, gocomms.Int8, gocomms.Float16, gocomms.BFloat16}, Counts: []int{3}})
}

// TestCollectivesLarge runs every collective on about a million elements
// per rank, enough to pipeline many chunks, at a few world sizes.
func TestCollectivesLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large counts run in the full (non-short) test run")
	}
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			sweep(t, n, commtest.Plan{DTypes: []gocomms.DType{gocomms.Float32, gocomms.Int32}, Counts: []int{1<<20 + 1}})
		})
	}
}
