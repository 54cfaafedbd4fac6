package bench

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

func supportedRedOps(dt gocomms.DType) []gocomms.ReduceOp {
	var ops []gocomms.ReduceOp
	for _, r := range RedOps {
		if r.Op.Supports(dt) == nil {
			ops = append(ops, r.Op)
		}
	}
	return ops
}

// TestPatternOrderFree is the claim the checker rests on: combining the
// patterns of every rank in any order, as any algorithm may, gives the bits
// of the rank-order reference.
func TestPatternOrderFree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dt := rapid.SampledFrom(tensor.DTypes()).Draw(rt, "dtype")
		op := rapid.SampledFrom(supportedRedOps(dt)).Draw(rt, "redop")
		ranks := rapid.IntRange(1, 256).Draw(rt, "ranks")
		off := rapid.IntRange(0, 1<<22).Draw(rt, "offset")
		order := rapid.Permutation(seq(ranks)).Draw(rt, "order")
		const n = 64
		pat := newPattern(dt, op, true, ranks)
		ck := newChecker(dt, op, ranks)
		ck.pat = pat
		want := make([]byte, n*dt.Size())
		ck.reference(want, reduced, off)

		// Combine as a tree over the permuted ranks, pairing neighbours:
		// the shape of recursive doubling and of binomial trees.
		parts := make([][]byte, ranks)
		for i, r := range order {
			parts[i] = make([]byte, len(want))
			pat.fill(parts[i], r, off)
		}
		for len(parts) > 1 {
			var next [][]byte
			for i := 0; i+1 < len(parts); i += 2 {
				reduce.Combine(op, dt, parts[i], parts[i], parts[i+1])
				next = append(next, parts[i])
			}
			if len(parts)%2 == 1 {
				next = append(next, parts[len(parts)-1])
			}
			parts = next
		}
		reduce.Finish(op, dt, parts[0], ranks)
		if !bytes.Equal(parts[0], want) {
			rt.Fatalf("%v %v on %d ranks: tree order differs from rank order", dt, op, ranks)
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestCheckerCountsWrongElements(t *testing.T) {
	for _, dt := range tensor.DTypes() {
		for _, src := range []int{reduced, 2} {
			const ranks, n, off = 3, 3*checkChunk + 5, 17 // chunks and a remainder
			ck := newChecker(dt, gocomms.Max, ranks)
			ck.pat = newPattern(dt, gocomms.Max, src == reduced, ranks)
			es := dt.Size()
			buf := make([]byte, n*es)
			for lo := 0; lo < n; lo += checkChunk {
				ck.reference(buf[lo*es:min(lo+checkChunk, n)*es], src, off+lo)
			}
			if got := ck.wrong(region{buf, src, off}); got != 0 {
				t.Errorf("%v from %d: %d wrong in the reference itself", dt, src, got)
			}
			bad := []int{0, checkChunk - 1, checkChunk, n - 1}
			for _, i := range bad {
				buf[i*es] ^= 0x80 // flips a value bit of every dtype but bool's
				if dt == gocomms.Bool {
					buf[i] = 1 - buf[i]&1
				}
			}
			if got := ck.wrong(region{buf, src, off}); got != int64(len(bad)) {
				t.Errorf("%v from %d: %d wrong, want %d", dt, src, got, len(bad))
			}
			if got := ck.wrong(region{buf, src, off + 1}); got < n/8 { // bool ORs to 1 at 7 in 8
				t.Errorf("%v from %d: data one element off counts only %d of %d wrong", dt, src, got, n)
			}
		}
	}
}
