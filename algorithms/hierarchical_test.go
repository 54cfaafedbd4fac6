package algorithms

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

// TestHierarchical runs the two-level all-reduce through the symbolic
// network with ranks per node that divide the size: one rank per node, one
// node, and the cases in between, on counts that leave segments empty (0, 1,
// fewer than the ranks) and span several chunks, in and out of place.
func TestHierarchical(t *testing.T) {
	seed := uint64(0x41e7)
	for _, tc := range []struct {
		p      int
		locals []int
	}{
		{2, []int{1, 2}},
		{4, []int{1, 2, 4}},
		{6, []int{2, 3}},
		{8, []int{2, 4, 8}},
		{9, []int{3}},
		{12, []int{2, 3, 4, 6}},
		{16, []int{2, 4, 8}},
	} {
		counts := slices.Sorted(slices.Values([]int{0, 1, tc.p - 1, 37, 3*tc.p + 1}))
		for _, l := range tc.locals {
			for _, n := range slices.Compact(counts) {
				for _, ip := range []bool{false, true} {
					seed++
					base := Spec{Kind: AllReduce, Size: tc.p, LocalSize: l, Counts: []int{n}, ElemSize: tableElem, ChunkBytes: tableChunk, InPlace: ip, Algorithm: "hierarchical"}
					if err := Check(EveryRank(base), seed); err != nil {
						t.Fatalf("p=%d local=%d n=%d inplace=%v seed=%d: %v", tc.p, l, n, ip, seed, err)
					}
				}
			}
		}
	}
}

// TestHierarchicalTraffic checks what crosses node boundaries: only messages
// between ranks of the same local index, 2(N-1)·n elements in all for N
// nodes (each local index all-reduces its 1/L shard around N ranks), against
// 2(L-1)·n elements inside each node.
func TestHierarchicalTraffic(t *testing.T) {
	const n = 101
	for _, tc := range []struct{ p, l int }{{8, 2}, {8, 4}, {12, 3}, {12, 4}, {9, 3}} {
		base := Spec{Kind: AllReduce, Size: tc.p, LocalSize: tc.l, Counts: []int{n}, ElemSize: 4, ChunkBytes: 12, Algorithm: "hierarchical"}
		scheds, err := buildAll(specsFor(base, nil))
		if err != nil {
			t.Fatal(err)
		}
		nodes := tc.p / tc.l
		inter, intra := 0, 0
		for r, sc := range scheds {
			for _, st := range sc.Steps {
				switch {
				case st.Prim != Send:
				case st.Peer/tc.l == r/tc.l:
					intra += st.Src.Len
				case st.Peer%tc.l != r%tc.l:
					t.Fatalf("p=%d local=%d: rank %d sends to rank %d, another node's other local rank", tc.p, tc.l, r, st.Peer)
				default:
					inter += st.Src.Len
				}
			}
		}
		if want := 2 * (nodes - 1) * n; inter != want {
			t.Errorf("p=%d local=%d: %d elements between nodes, want %d", tc.p, tc.l, inter, want)
		}
		if want := nodes * 2 * (tc.l - 1) * n; intra != want {
			t.Errorf("p=%d local=%d: %d elements inside nodes, want %d", tc.p, tc.l, intra, want)
		}
	}
}

// TestHierarchicalUnknownLocalSize: a LocalSize that is zero or does not
// divide the size leaves one node of every rank, the ring all-reduce.
func TestHierarchicalUnknownLocalSize(t *testing.T) {
	for _, tc := range []struct{ p, l int }{{6, 0}, {6, 4}, {7, 2}, {4, 8}} {
		for r := range tc.p {
			s := Spec{Kind: AllReduce, Rank: r, Size: tc.p, LocalSize: tc.l, Counts: []int{29}, ElemSize: 4, ChunkBytes: 16}
			s.Algorithm = "hierarchical"
			h, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			s.Algorithm = "ring"
			g, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h.Steps, g.Steps) || !slices.Equal(h.Scratch, g.Scratch) {
				t.Errorf("p=%d local=%d rank %d: schedule differs from the ring's", tc.p, tc.l, r)
			}
		}
	}
	_, err := Build(Spec{Kind: AllReduce, Size: 4, LocalSize: -2, Counts: []int{8}, ElemSize: 4, Algorithm: "hierarchical"})
	if !errors.Is(err, ErrBadSpec) {
		t.Fatalf("LocalSize -2: got %v, want ErrBadSpec", err)
	}
}
