package simulation

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestTimerQueueOrder pushes and pops timers in any interleaving, many at
// the same time, and expects every pop to take the earliest left by time,
// then arming order, as a sorted list of those pushed says.
func TestTimerQueueOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q timerQueue
		var left []armed // the reference: what is pushed and not popped
		var seq uint64
		ops := rapid.SliceOfN(rapid.IntRange(-1, 6), 50, 600).Draw(t, "ops") // -1 pops, else pushes at that time
		for _, op := range ops {
			if op >= 0 {
				seq++
				a := armed{at: time.Duration(op), seq: seq}
				q.push(a)
				left = append(left, a)
				continue
			}
			if len(left) == 0 {
				continue
			}
			slices.SortFunc(left, func(a, b armed) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) })
			if got := q[0]; got.at != left[0].at || got.seq != left[0].seq {
				t.Fatalf("popped (%v, %d), want (%v, %d)", got.at, got.seq, left[0].at, left[0].seq)
			}
			q.pop()
			left = left[1:]
		}
		if len(q) != len(left) {
			t.Fatalf("%d timers queued, want %d", len(q), len(left))
		}
	})
}
