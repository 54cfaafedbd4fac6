package gocomms_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// TestPropertyRandomCollectives draws world sizes, dtypes, ops, counts,
// roots and split colors, and checks all-reduce, reduce, broadcast and
// all-gather on a SplitByColor child against the reference.
func TestPropertyRandomCollectives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(rt, "ranks")
		dt := rapid.SampledFrom(tensor.DTypes()).Draw(rt, "dtype")
		op := rapid.SampledFrom(validOps(dt)).Draw(rt, "op")
		count := rapid.IntRange(0, 300).Draw(rt, "count")
		root := rapid.IntRange(0, n-1).Draw(rt, "root")
		colors := rapid.SliceOfN(rapid.IntRange(-1, 2), n, n).Draw(rt, "colors")
		seed := rapid.IntRange(0, 1000).Draw(rt, "seed")

		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			s := sweeper{c: c, n: n, r: c.Rank(), seed: seed}
			if err := s.allReduce(ctx, dt, op, count); err != nil {
				return err
			}
			s.seed = seed*n + root // reduce and broadcast take root = seed % n
			if err := s.reduce(ctx, dt, op, count); err != nil {
				return err
			}
			if err := s.broadcast(ctx, dt, count); err != nil {
				return err
			}
			child, err := c.SplitByColor(ctx, colors[c.Rank()], -c.Rank())
			if err != nil {
				return err
			}
			if colors[c.Rank()] < 0 {
				if child != nil {
					return fmt.Errorf("negative color joined a group")
				}
				return nil
			}
			var want []int
			for q := n - 1; q >= 0; q-- {
				if colors[q] == colors[c.Rank()] {
					want = append(want, q)
				}
			}
			if !slices.Equal(child.Ranks(), want) {
				return fmt.Errorf("color %d: group %v, want %v", colors[c.Rank()], child.Ranks(), want)
			}
			cs := sweeper{c: child, n: child.Size(), r: child.Rank(), seed: seed}
			if err := cs.allGather(ctx, dt, count); err != nil {
				return err
			}
			return child.Finalize(ctx)
		})
		if err != nil {
			rt.Fatal(err)
		}
	})
}
