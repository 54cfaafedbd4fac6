package collective

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
)

// TestHeldFramesMatchAMap: whatever the order frames arrive and steps run
// in, heldFrames holds exactly what a map by step would, in step order.
func TestHeldFramesMatchAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h heldFrames
		want := map[int]transport.Frame{}
		for i := range rapid.IntRange(0, 300).Draw(t, "ops") {
			step := rapid.IntRange(0, 40).Draw(t, "step")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				f := transport.Frame{Header: transport.Header{Seq: uint64(i)}}
				h.put(step, f)
				want[step] = f
			case 1:
				got, held := h.of(step), false
				w, ok := want[step]
				if got != nil {
					held = true
					if got.Header != w.Header {
						t.Fatalf("step %d holds %v, want %v", step, got.Header, w.Header)
					}
				}
				if held != ok {
					t.Fatalf("step %d: held %v, want %v", step, held, ok)
				}
			case 2:
				if got := h.take(step); got.Header != want[step].Header {
					t.Fatalf("take(%d) = %v, want %v", step, got.Header, want[step].Header)
				}
				delete(want, step)
			}
			steps := make([]int, len(h))
			for j, f := range h {
				steps[j] = f.step
			}
			if w := slices.Sorted(maps.Keys(want)); !slices.Equal(steps, w) {
				t.Fatalf("holds steps %v, want %v", steps, w)
			}
		}
	})
}
