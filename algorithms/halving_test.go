package algorithms

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestRabenseifner runs the algorithm through the symbolic network at sizes
// with and without extra ranks to fold, on counts that leave segments empty
// (0, 1, fewer than the ranks), barely fill them and span many chunks, with
// chunk sizes that do and do not divide the halves, in and out of place.
func TestRabenseifner(t *testing.T) {
	seed := uint64(0x7ab5)
	for _, p := range []int{1, 2, 3, 5, 6, 7, 8, 12, 13, 16} {
		pp := floorPow2(p)
		counts := slices.Sorted(slices.Values([]int{0, 1, max(p-1, 1), pp + 1, 37, 3*p + 1, 257}))
		for _, n := range slices.Compact(counts) {
			for _, chunk := range []int{tableChunk, 24, 0} { // 4, 6, all elements
				for _, ip := range []bool{false, true} {
					seed++
					base := Spec{Kind: AllReduce, Size: p, Counts: []int{n}, ElemSize: tableElem, ChunkBytes: chunk, InPlace: ip, Algorithm: "rabenseifner"}
					if err := Check(EveryRank(base), seed); err != nil {
						t.Fatalf("p=%d n=%d chunk=%d inplace=%v seed=%d: %v", p, n, chunk, ip, seed, err)
					}
				}
			}
		}
	}
}

// TestRabenseifnerSteps pins the step counts: 4 per round on the p' ranks,
// 2 more on those that fold, 2 on the extras; none when a half is empty.
func TestRabenseifnerSteps(t *testing.T) {
	for _, tc := range []struct {
		p, n, rank, want int
	}{
		{p: 8, n: 64, rank: 5, want: 4 * 3},
		{p: 6, n: 64, rank: 1, want: 4*2 + 2}, // folds rank 5 in
		{p: 6, n: 64, rank: 3, want: 4 * 2},
		{p: 6, n: 64, rank: 5, want: 2},
		// One element, on segment 0: the odd ranks hand it over in round 0
		// and get it back in the last round of the all-gather; rank 2
		// reduces it, hands it to rank 0, which owns it, and forwards the
		// result to rank 3.
		{p: 4, n: 1, rank: 0, want: 4},
		{p: 4, n: 1, rank: 1, want: 2},
		{p: 4, n: 1, rank: 2, want: 4},
		{p: 4, n: 1, rank: 3, want: 2},
		{p: 5, n: 0, rank: 4, want: 0},
	} {
		s, err := Build(Spec{Kind: AllReduce, Rank: tc.rank, Size: tc.p, Counts: []int{tc.n}, ElemSize: 4, Algorithm: "rabenseifner"})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Steps) != tc.want || len(s.Scratch) != 0 {
			t.Errorf("p=%d n=%d rank %d: %d steps, scratch %v; want %d steps, no scratch", tc.p, tc.n, tc.rank, len(s.Steps), s.Scratch, tc.want)
		}
	}
}

// TestRabenseifner100k builds three ranks of a 100,000-rank 1 MiB float32
// all-reduce (p' = 65,536: 16 rounds; ranks below 34,464 fold in the rest),
// checks that their step counts and allocations do not grow with p, and
// that each agrees with every peer it talks to on the messages between them.
func TestRabenseifner100k(t *testing.T) {
	const p, n, rounds = 100_000, 1 << 18, 16
	spec := func(rank, chunkBytes int) Spec {
		return Spec{Kind: AllReduce, Rank: rank, Size: p, Counts: []int{n}, ElemSize: 4, ChunkBytes: chunkBytes, Algorithm: "rabenseifner"}
	}
	build := func(s Spec) *Schedule {
		t.Helper()
		sc, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	start := time.Now()
	for _, tc := range []struct {
		rank, unchunked, chunked int // steps whole and in DefaultChunkBytes
	}{
		{0, 4*rounds + 2, 4*rounds + 4}, // the fold moves 1 MiB: two chunks each way
		{65_535, 4 * rounds, 4 * rounds},
		{99_999, 2, 4},
	} {
		whole, chunked := build(spec(tc.rank, 4*n)), build(spec(tc.rank, 0))
		if got := len(whole.Steps); got != tc.unchunked || got > 4*(rounds+1)+8 {
			t.Errorf("rank %d: %d steps unchunked, want %d", tc.rank, got, tc.unchunked)
		}
		if got := len(chunked.Steps); got != tc.chunked {
			t.Errorf("rank %d: %d steps in %d KiB chunks, want %d", tc.rank, got, DefaultChunkBytes>>10, tc.chunked)
		}
		peers := map[int]*Schedule{}
		for _, st := range chunked.Steps {
			if peers[st.Peer] == nil {
				peers[st.Peer] = build(spec(st.Peer, 0))
			}
		}
		for _, sq := range peers {
			if err := sameMessages(chunked, sq); err != nil {
				t.Errorf("%v", err)
			}
			if err := sameMessages(sq, chunked); err != nil {
				t.Errorf("%v", err)
			}
		}
		// About 60: the Builder's, for a few dozen steps and peers.
		if allocs := testing.AllocsPerRun(5, func() { build(spec(tc.rank, 0)) }); allocs > 100 {
			t.Errorf("rank %d: %v allocations per build", tc.rank, allocs)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("building took %v", d)
	}
}

// sameMessages checks that every message a sends b is received by b, in tag
// order and with the same length.
func sameMessages(a, b *Schedule) error {
	var sent, got []int
	for _, st := range a.Steps {
		if st.Prim == Send && st.Peer == b.Rank {
			sent = append(sent, st.Src.Len)
		}
	}
	for _, st := range b.Steps {
		if st.Prim.Receives() && st.Peer == a.Rank {
			got = append(got, st.Dst.Len)
		}
	}
	if !slices.Equal(sent, got) {
		return fmt.Errorf("rank %d sends rank %d messages of %v elements, which receives %v", a.Rank, b.Rank, sent, got)
	}
	return nil
}
