package algorithms

import (
	"slices"
	"testing"
)

// TestDirectReducesInRankOrder checks that every rank folds the inputs of
// each chunk in rank order, its own through Accumulate, each fold after
// the one before: the same order on every rank, so the same bits.
func TestDirectReducesInRankOrder(t *testing.T) {
	for _, p := range []int{2, 3, 5, 8} {
		for _, inPlace := range []bool{false, true} {
			for _, s := range EveryRank(Spec{Kind: AllReduce, Size: p, Counts: []int{10}, ElemSize: 4, ChunkBytes: 16, InPlace: inPlace, Algorithm: "direct"}) {
				sc, err := Build(s)
				if err != nil {
					t.Fatal(err)
				}
				var order []int // the rank each fold of the first chunk takes, in program order
				last := -1
				for i, st := range sc.Steps {
					if st.Dst.Buf != Output || st.Dst.Off != 0 {
						continue
					}
					switch st.Prim {
					case Copy, Accumulate:
						order = append(order, s.Rank)
					case Recv, RecvReduce:
						order = append(order, st.Peer)
					}
					if last >= 0 && !slices.Contains(st.Deps, int32(last)) {
						t.Errorf("p=%d rank %d: step %d (%v) does not wait for the fold before it", p, s.Rank, i, st)
					}
					last = i
				}
				if want := identity(p); !slices.Equal(order, want) {
					t.Errorf("p=%d in place %v rank %d: folds %v, want %v", p, inPlace, s.Rank, order, want)
				}
			}
		}
	}
}

func identity(p int) []int {
	ids := make([]int, p)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

func TestCheckRejectsAccumulatingIntoNothing(t *testing.T) {
	r := uncheckedRegistry(AllReduce, "test_accumulate_unwritten", func(b *Builder, s *Spec) {
		n := s.Counts[0]
		b.Accumulate(whole(Scratch, b.Scratch(n), n), whole(Input, 0, n))
		b.Copy(whole(Output, 0, n), whole(Input, 0, n))
	})
	err := Check(EveryRank(Spec{Kind: AllReduce, Size: 1, Counts: []int{2}, ElemSize: 4, Algorithm: "test_accumulate_unwritten", Registry: r}), 1)
	if err == nil {
		t.Fatal("the checker passed a step accumulating into an element never written")
	}
}
