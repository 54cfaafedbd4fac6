package flight

import (
	"runtime"
	"slices"
	"testing"
)

// item is large enough to have an allocation of its own, which a
// collection frees alone.
type item struct{ _ [64]byte }

func TestLive(t *testing.T) {
	var l Live[item]
	a, b, c := new(item), new(item), new(item)
	l.Add(a)
	l.Add(b)
	l.Add(c)
	l.Remove(b)
	if got := l.List(); !slices.Equal(got, []*item{a, c}) {
		t.Fatalf("listed %v, want a and c", got)
	}
	l.Add(new(item)) // dropped without Remove
	runtime.GC()
	if got := l.List(); !slices.Equal(got, []*item{a, c}) {
		t.Errorf("after a collection: %d listed, want a and c", len(got))
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(c)
}
