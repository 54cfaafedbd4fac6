package algorithms

import (
	"fmt"
	"testing"
)

// TestAllGatherLargerSizes runs recursive doubling and Bruck through the
// symbolic network at sizes beyond the table's, powers of two and not, with
// equal counts and with V forms that leave every third block empty, in and
// out of place.
func TestAllGatherLargerSizes(t *testing.T) {
	seed := uint64(0xa119)
	for _, alg := range []string{"recursive_doubling", "bruck"} {
		for _, p := range []int{12, 17, 24, 31, 32, 33} {
			cases := map[string][]int{
				"3":      uniform(p, 3),
				"v_zero": vform(p, func(q int) int { return q % 3 * 5 }),
			}
			for name, counts := range cases {
				for _, ip := range []bool{false, true} {
					seed++
					base := Spec{Kind: AllGather, Size: p, Counts: counts, ElemSize: tableElem, ChunkBytes: tableChunk, InPlace: ip, Algorithm: alg}
					if err := Check(EveryRank(base), seed); err != nil {
						t.Fatalf("%s: %v", fmt.Sprintf("%s p=%d counts=%s inplace=%v seed=%d", alg, p, name, ip, seed), err)
					}
				}
			}
		}
	}
}

// TestAllGatherCosts pins message counts and pipelining: with one chunk
// per block every rank sends and receives p-1 messages; with many chunks
// the critical path is set by the rounds alone (see checkCosts).
func TestAllGatherCosts(t *testing.T) {
	for _, tc := range []struct {
		alg    string
		p      int
		rounds int
	}{
		{"recursive_doubling", 8, 3},
		{"recursive_doubling", 16, 4},
		{"bruck", 5, 3},
		{"bruck", 6, 3},
		{"bruck", 8, 3},
		{"bruck", 13, 4},
	} {
		t.Run(fmt.Sprintf("%s/p=%d", tc.alg, tc.p), func(t *testing.T) {
			checkCosts(t, Spec{Kind: AllGather, Size: tc.p, Algorithm: tc.alg}, tc.p-1, 2*tc.rounds+1)
		})
	}
	// Folding costs an extra hop each way: 2 rounds among 4 ranks, plus 2.
	t.Run("recursive_doubling/p=6", func(t *testing.T) {
		checkCosts(t, Spec{Kind: AllGather, Size: 6, Algorithm: "recursive_doubling"}, -1, 2*(2+2)+1)
	})
}

// checkCosts builds base (Kind, Size and Algorithm set) for every rank with
// one-element blocks and one-element chunks and checks that each rank sends
// and receives msgs messages (unless msgs < 0); then, with blocks of 32
// chunks, that the critical path takes at most path steps. A schedule of r
// rounds of message hops, each a send and its receive, and a final local
// copy pipelines when path = 2r+1 holds whatever the number of chunks.
func checkCosts(t *testing.T, base Spec, msgs, path int) {
	t.Helper()
	const chunks = 32
	base.ElemSize, base.ChunkBytes = 1, 1
	base.Counts = uniform(base.Size, 1)
	scheds, err := buildAll(specsFor(base, nil))
	if err != nil {
		t.Fatal(err)
	}
	for r, sc := range scheds {
		sent, received := 0, 0
		for _, st := range sc.Steps {
			switch {
			case st.Prim == Send:
				sent++
			case st.Prim.Receives():
				received++
			}
		}
		if msgs >= 0 && (sent != msgs || received != msgs) {
			t.Errorf("rank %d sends %d and receives %d messages, want %d each", r, sent, received, msgs)
		}
	}
	base.Counts = uniform(base.Size, chunks)
	if scheds, err = buildAll(specsFor(base, nil)); err != nil {
		t.Fatal(err)
	}
	if got := criticalPath(t, scheds); got > path {
		t.Errorf("critical path %d steps for blocks of %d chunks, want at most %d", got, chunks, path)
	}
}
