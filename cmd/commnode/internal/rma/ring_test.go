package rma

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// TestRing runs the WindowRmaTest ring on 1 to 3 ranks, every dtype, the
// smaller counts (the million is for commnode rma --verify and the tests
// in test/).
func TestRing(t *testing.T) {
	for name, opts := range networks() {
		for ranks := 1; ranks <= 3; ranks++ {
			t.Run(fmt.Sprintf("%s/ranks=%d", name, ranks), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				err := gocomms.RunLocal(ctx, ranks, func(ctx context.Context, c *gocomms.Comm) error {
					for _, count := range []int{4, 1024} {
						for _, dt := range RingDTypes {
							wrong, err := Ring(ctx, c, dt, count, RingIters, func(m Mismatch) { t.Error(m) })
							if err != nil {
								return err
							}
							if wrong != 0 {
								return fmt.Errorf("rank %d: %v × %d: %d wrong", c.Rank(), dt, count, wrong)
							}
						}
					}
					return nil
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestAtomics(t *testing.T) {
	for name, opts := range networks() {
		for _, ranks := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/ranks=%d", name, ranks), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				const adds = 50
				err := gocomms.RunLocal(ctx, ranks, func(ctx context.Context, c *gocomms.Comm) error {
					checks, err := Atomics(ctx, c, adds, func(s string) { t.Error(s) })
					if err != nil {
						return err
					}
					if len(checks) != 2 || checks[0].Op != FetchAndOp || checks[1].Op != CompareAndSwap {
						return fmt.Errorf("checks %+v", checks)
					}
					for _, ch := range checks {
						if ch.Ops != ranks*adds || ch.Wrong != 0 {
							return fmt.Errorf("rank %d: %+v", c.Rank(), ch)
						}
					}
					return nil
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestMismatchString(t *testing.T) {
	m := Mismatch{Rank: 2, From: 1, DType: gocomms.Int8, Count: 1024, Iter: 3, Elem: 17, Got: 5, Want: 52, WrongInBlock: 4}
	got := m.String()
	for _, want := range []string{"rank 2", "int8 × 1024", "iteration 3", "element 17", "rank 1's block", "is 5, want 52", "4 of the block's 1024"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q says nothing of %q", got, want)
		}
	}
}

// TestRingValueFits: every value fits int8 exactly, and a block differs
// from the previous iteration's and from the neighbours'.
func TestRingValueFits(t *testing.T) {
	for r := range 4 {
		for it := range RingIters {
			v := RingValue(r, it, 0)
			if v < 0 || v > 127 {
				t.Fatalf("RingValue(%d, %d, 0) = %d", r, it, v)
			}
			if it > 0 && v == RingValue(r, it-1, 0) {
				t.Errorf("rank %d puts %d in iterations %d and %d", r, v, it-1, it)
			}
			if v == RingValue(r+1, it, 0) {
				t.Errorf("ranks %d and %d put %d in iteration %d", r, r+1, v, it)
			}
		}
	}
}
