package algorithms

import (
	"fmt"
	"slices"
	"testing"
)

// TestReduceScatterLargerSizes runs recursive halving and pairwise through
// the symbolic network at sizes beyond the table's, powers of two and not,
// with equal counts and with V forms that leave every third block empty.
func TestReduceScatterLargerSizes(t *testing.T) {
	seed := uint64(0x5ca7)
	for _, alg := range []string{"recursive_halving", "pairwise"} {
		for _, p := range []int{12, 17, 24, 31, 32, 33} {
			cases := map[string][]int{
				"3":      uniform(p, 3),
				"v_zero": vform(p, func(q int) int { return q % 3 * 5 }),
			}
			for name, counts := range cases {
				seed++
				base := Spec{Kind: ReduceScatter, Size: p, Counts: counts, ElemSize: tableElem, ChunkBytes: tableChunk, Algorithm: alg}
				if err := Check(EveryRank(base), seed); err != nil {
					t.Fatalf("%s: %v", fmt.Sprintf("%s p=%d counts=%s seed=%d", alg, p, name, seed), err)
				}
			}
		}
	}
}

// TestReduceScatterCosts pins message counts and pipelining (see
// checkCosts). Pairwise sends everything at once and folds each chunk in a
// chain of p-1 receives: a critical path of p steps, whatever the chunks.
func TestReduceScatterCosts(t *testing.T) {
	for _, tc := range []struct {
		alg        string
		p          int
		msgs, path int
	}{
		{"recursive_halving", 8, 7, 2*3 + 1},
		{"recursive_halving", 16, 15, 2*4 + 1},
		{"recursive_halving", 6, -1, 2*(2+2) + 1}, // fold and unfold
		{"pairwise", 5, 4, 5},
		{"pairwise", 8, 7, 8},
	} {
		t.Run(fmt.Sprintf("%s/p=%d", tc.alg, tc.p), func(t *testing.T) {
			checkCosts(t, Spec{Kind: ReduceScatter, Size: tc.p, Algorithm: tc.alg}, tc.msgs, tc.path)
		})
	}
}

// TestReduceScatterPairwiseOrder checks that every rank folds the
// contributions in the same order, its own first and then ranks r-1, r-2,
// …, under any delivery order.
func TestReduceScatterPairwiseOrder(t *testing.T) {
	const p, n = 5, 9
	base := Spec{Kind: ReduceScatter, Size: p, Counts: uniform(p, n), ElemSize: tableElem, ChunkBytes: tableChunk, Algorithm: "pairwise"}
	for seed := range uint64(10) {
		net, err := simulate(specsFor(base, nil), simOptions{seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for r, sr := range net.ranks {
			for i, v := range sr.mem[Output][0] {
				want := make(value, 0, p)
				for k := range p {
					want = append(want, mkContrib(mod(r-k, p), r, i))
				}
				if !slices.Equal(v, want) {
					t.Fatalf("seed %d rank %d element %d folded as %v, want %v", seed, r, i, v, want)
				}
			}
		}
	}
}
