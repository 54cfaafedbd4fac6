package algorithms

import (
	"fmt"
	"slices"
)

// admitSizes are the rank counts Register proves a schedule at: one rank,
// a power of two and not, odd and even. With admitCases's small counts,
// two elements to a message, in place and not, the proof of a built-in
// schedule takes milliseconds.
var admitSizes = []int{1, 2, 3, 4, 5}

const (
	admitElem  = 4
	admitChunk = 2 * admitElem
)

// admit proves gen, kind's schedule under name, with Check on the
// collectives admitCases lists, and returns the first refusal, naming the
// collective that failed.
func admit(kind Kind, name string, gen Generator) error {
	t := builtin
	t[kind] = append(slices.Clip(t[kind]), algorithm{name, gen})
	r := new(Registry)
	r.added.Store(&t)
	for _, p := range admitSizes {
		for _, specs := range admitCases(kind, p) {
			for i := range specs {
				specs[i].Algorithm, specs[i].Registry = name, r
			}
			if err := Check(specs, 1); err != nil {
				return fmt.Errorf("%w: register %v %q: the checker refuses it for %s: %w", ErrBadSchedule, kind, name, describe(specs), err)
			}
		}
	}
	return nil
}

// admitCases returns the collectives of kind at p ranks that admit
// proves, each as every rank's Spec: empty, one element, several messages,
// and uneven counts where a kind has one per rank, rooted at the last
// rank, and in place where the kind is defined so.
func admitCases(kind Kind, p int) [][]Spec {
	base := Spec{Kind: kind, Size: p, Root: p - 1, ElemSize: admitElem, ChunkBytes: admitChunk, LocalSize: 2}
	var counts [][]int
	switch kind {
	case AllReduce, Reduce, Broadcast:
		counts = [][]int{{0}, {1}, {2*p + 1}}
	case AllGather, ReduceScatter, Gather, Scatter:
		uneven := make([]int, p)
		for q := range uneven {
			uneven[q] = (3*q + 1) % 4
		}
		counts = [][]int{uneven, slices.Repeat([]int{3}, p)}
	case AllToAll:
		specs := EveryRank(base)
		for r := range specs {
			specs[r].SendCounts, specs[r].RecvCounts = make([]int, p), make([]int, p)
			for q := range p {
				specs[r].SendCounts[q], specs[r].RecvCounts[q] = (r+2*q)%3, (q+2*r)%3
			}
		}
		return [][]Spec{specs}
	case Barrier:
		return [][]Spec{EveryRank(base)}
	}
	var cases [][]Spec
	for _, c := range counts {
		for _, inPlace := range []bool{false, true} {
			if inPlace && kind != AllReduce && kind != Reduce && kind != AllGather {
				continue
			}
			s := base
			s.Counts, s.InPlace = c, inPlace
			cases = append(cases, EveryRank(s))
		}
	}
	return cases
}

// describe names a collective admit proves, as its specs have it.
func describe(specs []Spec) string {
	s := specs[0]
	d := fmt.Sprintf("%d ranks", s.Size)
	switch {
	case s.Kind == AllToAll:
		d += ", send counts"
		for _, sp := range specs {
			d += fmt.Sprint(" ", sp.SendCounts)
		}
	case s.Kind != Barrier:
		d += fmt.Sprint(", counts ", s.Counts)
	}
	if s.rooted() {
		d += fmt.Sprint(", root ", s.Root)
	}
	if s.InPlace {
		d += ", in place"
	}
	return fmt.Sprintf("%s, %d-byte elements, %d-byte messages", d, s.ElemSize, s.ChunkBytes)
}
