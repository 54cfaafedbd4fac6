package gocomms_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/tensor"
)

// TestPropertyRandomCollectives draws world sizes, dtypes, ops, counts,
// roots and split colors, and checks all-reduce, reduce and broadcast
// against the reference, then all-reduce again on each split's group.
func TestPropertyRandomCollectives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(rt, "ranks")
		dt := rapid.SampledFrom(tensor.DTypes()).Draw(rt, "dtype")
		op := rapid.SampledFrom(commtest.ValidOps(dt)).Draw(rt, "op")
		count := rapid.IntRange(0, 300).Draw(rt, "count")
		root := rapid.IntRange(0, n-1).Draw(rt, "root")
		seed := rapid.IntRange(0, 1000).Draw(rt, "seed")
		colors := rapid.SliceOfN(rapid.IntRange(-1, 2), n, n).Draw(rt, "colors")
		keys := rapid.SliceOfN(rapid.IntRange(0, 3), n, n).Draw(rt, "keys")

		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			ck := commtest.Checker{Comm: c, Seed: seed}
			if err := ck.AllReduce(ctx, dt, op, count); err != nil {
				return err
			}
			ck.Seed = seed*n + root // reduce and broadcast take root = seed % n
			if err := ck.Reduce(ctx, dt, op, count); err != nil {
				return err
			}
			if err := ck.Broadcast(ctx, dt, count); err != nil {
				return err
			}
			return checkColorSplit(ctx, c, colors, keys, func(child *gocomms.Comm) error {
				ck := commtest.Checker{Comm: child, Seed: seed}
				return ck.AllReduce(ctx, dt, op, count)
			})
		})
		if err != nil {
			rt.Fatal(err)
		}
	})
}

// checkColorSplit splits c by colors[rank] and keys[rank], checks that the
// caller's group holds the ranks of its color ordered by key then rank, and
// runs check on it.
func checkColorSplit(ctx context.Context, c *gocomms.Comm, colors, keys []int, check func(*gocomms.Comm) error) error {
	r := c.Rank()
	child, err := c.SplitByColor(ctx, colors[r], keys[r])
	if err != nil {
		return err
	}
	if colors[r] < 0 {
		if child != nil {
			return fmt.Errorf("rank %d passed a negative color and joined a group", r)
		}
		return nil
	}
	var want []int
	for q, col := range colors {
		if col == colors[r] {
			want = append(want, q)
		}
	}
	slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	if got := child.Ranks(); !slices.Equal(got, want) {
		return fmt.Errorf("rank %d: group of color %d is %v, want %v", r, colors[r], got, want)
	}
	if err := check(child); err != nil {
		return err
	}
	return child.Finalize(ctx)
}
