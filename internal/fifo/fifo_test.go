package fifo

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestQueue runs random pushes, pops and removals against a slice.
func TestQueue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q Queue[int]
		var want []int
		next := 0
		for range rapid.IntRange(0, 200).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0 || len(want) == 0:
				q.Push(next)
				want = append(want, next)
				next++
			case op == 1:
				v, ok := q.Pop()
				if !ok || v != want[0] {
					t.Fatalf("Pop() = %d, %v; want %d", v, ok, want[0])
				}
				want = want[1:]
			default:
				i := rapid.IntRange(0, len(want)-1).Draw(t, "i")
				q.Remove(i)
				want = slices.Delete(want, i, i+1)
			}
			if q.Len() != len(want) {
				t.Fatalf("Len() = %d, want %d", q.Len(), len(want))
			}
			for i, w := range want {
				if q.At(i) != w {
					t.Fatalf("At(%d) = %d, want %d", i, q.At(i), w)
				}
			}
		}
		if len(want) == 0 {
			if _, ok := q.Pop(); ok {
				t.Fatal("Pop() on an empty queue reported an item")
			}
		}
	})
}
