package algorithms

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestRebuildMatchesBuild: one Builder rebuilt for a run of drawn
// specs (every kind and algorithm, sizes, counts, ranks) gives each the
// schedule a fresh Build gives, and leaves the schedules it built before
// as they were.
func TestRebuildMatchesBuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b Builder
		var built, want []*Schedule
		for range rapid.IntRange(1, 12).Draw(t, "builds") {
			kind := rapid.SampledFrom(allKinds).Draw(t, "kind")
			p := rapid.SampledFrom(tableSizes).Draw(t, "size")
			cases := countCases(kind, p)
			cc := cases[rapid.IntRange(0, len(cases)-1).Draw(t, "counts")]
			base := Spec{Kind: kind, Size: p, Root: p / 2, Counts: cc.counts, ElemSize: tableElem, ChunkBytes: tableChunk,
				Algorithm: rapid.SampledFrom((*Registry)(nil).Algorithms(kind)).Draw(t, "algorithm")}
			specs := specsFor(base, cc.matrix)
			spec := specs[rapid.IntRange(0, p-1).Draw(t, "rank")]
			fresh, err := Build(spec)
			if err != nil {
				continue // a spec this algorithm does not take
			}
			again, err := b.Rebuild(spec)
			if err != nil {
				t.Fatalf("Rebuild(%+v): %v", spec, err)
			}
			if !sameSchedule(again, fresh) {
				t.Fatalf("Rebuild(%+v) gives\n%v\nBuild gives\n%v", spec, again.Steps, fresh.Steps)
			}
			built, want = append(built, again), append(want, fresh)
		}
		for i := range built {
			if !sameSchedule(built[i], want[i]) {
				t.Fatalf("schedule %d changed after later rebuilds: %v, want %v", i, built[i].Steps, want[i].Steps)
			}
		}
	})
}

func sameSchedule(a, b *Schedule) bool {
	return a.Algorithm == b.Algorithm && a.Rank == b.Rank && a.Size == b.Size &&
		reflect.DeepEqual(a.Steps, b.Steps) && reflect.DeepEqual(a.Scratch, b.Scratch)
}
