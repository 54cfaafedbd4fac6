package algorithms

import (
	"fmt"
	"math/bits"
	"slices"
	"testing"
)

// TestDoubleTreeShape checks both trees at every size up to 300: each is a
// binary tree spanning all ranks whose parent and child links agree, no
// deeper than the in-order tree allows, and no rank is interior in both.
func TestDoubleTreeShape(t *testing.T) {
	for p := 1; p <= 300; p++ {
		var trees [2][]dtree
		for t := range trees {
			for r := range p {
				trees[t] = append(trees[t], newDtree(r, p, t))
			}
		}
		for ti, tr := range trees {
			roots := 0
			for r, d := range tr {
				if len(d.children) > 2 {
					t.Fatalf("p=%d tree %d: rank %d has %d children", p, ti, r, len(d.children))
				}
				for _, ch := range d.children {
					if tr[ch].parent != r {
						t.Fatalf("p=%d tree %d: rank %d lists child %d, whose parent is %d", p, ti, r, ch, tr[ch].parent)
					}
				}
				if d.parent < 0 {
					roots++
					continue
				}
				// Reaching the root bounds the depth and rules out cycles.
				depth := 0
				for q := r; tr[q].parent >= 0; q = tr[q].parent {
					if depth++; depth >= bits.Len(uint(p)) {
						t.Fatalf("p=%d tree %d: rank %d is more than %d levels deep", p, ti, r, depth)
					}
				}
				if !slices.Contains(tr[d.parent].children, r) {
					t.Fatalf("p=%d tree %d: rank %d's parent %d does not list it", p, ti, r, d.parent)
				}
			}
			if roots != 1 {
				t.Fatalf("p=%d tree %d: %d roots", p, ti, roots)
			}
		}
		for r := range p {
			if len(trees[0][r].children) > 0 && len(trees[1][r].children) > 0 {
				t.Fatalf("p=%d: rank %d is interior in both trees", p, r)
			}
		}
	}
}

// TestAllReducePipelinesChunks: chunk j of any phase waits only for the
// chunks that wrote its elements, so the longest chain through all ranks is
// the same for 32 chunks per segment as for one. A tree's broadcast of a
// chunk, in particular, need not wait for the reduction of other chunks.
func TestAllReducePipelinesChunks(t *testing.T) {
	for _, tc := range []struct {
		alg      string
		p, local int
	}{
		{"double_binary_tree", 8, 0},
		{"double_binary_tree", 13, 0},
		{"hierarchical", 8, 2},
		{"hierarchical", 12, 4},
	} {
		t.Run(fmt.Sprintf("%s/p=%d/local=%d", tc.alg, tc.p, tc.local), func(t *testing.T) {
			path := func(chunks int) int {
				base := Spec{Kind: AllReduce, Size: tc.p, LocalSize: tc.local, Counts: []int{tc.p * chunks}, ElemSize: 1, ChunkBytes: 1, Algorithm: tc.alg}
				scheds, err := buildAll(specsFor(base, nil))
				if err != nil {
					t.Fatal(err)
				}
				return criticalPath(t, scheds)
			}
			if one, many := path(1), path(32); many != one {
				t.Errorf("critical path %d steps for 32 chunks per segment, %d for one", many, one)
			}
		})
	}
}
