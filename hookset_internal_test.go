package gocomms

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestHookSetKeepsOrderAndLists: hooks list in registration order, less
// the removed, and a list taken before a change keeps what it had.
func TestHookSetKeepsOrderAndLists(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s hookSet[int]
		var ids, want []int // want: the value each live hook was added with
		var lists [][]int
		var taken [][]int // what each list held when taken
		for v := range rapid.IntRange(0, 100).Draw(t, "ops") {
			switch {
			case len(ids) > 0 && rapid.Bool().Draw(t, "remove"):
				i := rapid.IntRange(0, len(ids)-1).Draw(t, "which")
				s.remove(ids[i])
				ids, want = slices.Delete(ids, i, i+1), slices.Delete(want, i, i+1)
			default:
				ids = append(ids, s.add(v))
				want = append(want, v)
			}
			if got := s.list(); !slices.Equal(got, want) {
				t.Fatalf("list %v, want %v", got, want)
			}
			lists, taken = append(lists, s.list()), append(taken, slices.Clone(want))
		}
		for i, l := range lists {
			if !slices.Equal(l, taken[i]) {
				t.Fatalf("list %d changed to %v since it was taken as %v", i, l, taken[i])
			}
		}
	})
}
