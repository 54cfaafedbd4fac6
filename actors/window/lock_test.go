package window

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestLocksModel: whatever ranks ask and release, the lock is held either
// exclusively by one rank or shared by any, never both; requests are
// granted in the order they came; a release by a rank that only waits
// withdraws its wait.
func TestLocksModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := newLocks()
		var asked []lockRequest // waiting, in order
		held := map[int]int{}   // rank -> holds
		for range rapid.IntRange(1, 100).Draw(t, "steps") {
			rank := rapid.IntRange(0, 4).Draw(t, "rank")
			var granted []lockRequest
			if rapid.Bool().Draw(t, "take") {
				q := lockRequest{origin: rank, exclusive: rapid.Bool().Draw(t, "exclusive")}
				asked = append(asked, q)
				granted = l.take(q)
			} else {
				switch i := slices.IndexFunc(asked, func(q lockRequest) bool { return q.origin == rank }); {
				case held[rank] > 0:
					held[rank]--
				case i >= 0:
					asked = slices.Delete(asked, i, i+1)
				}
				granted = l.release(rank)
			}
			for _, g := range granted {
				if len(asked) == 0 || asked[0] != g {
					t.Fatalf("granted %+v out of order; waiting %+v", g, asked)
				}
				asked = asked[1:]
				held[g.origin]++
			}
			if l.exclusive >= 0 && len(l.shared) > 0 {
				t.Fatalf("held exclusively by %d and shared by %v", l.exclusive, l.shared)
			}
			if len(asked) > 0 && l.grantable(asked[0]) {
				t.Fatalf("%+v waits though it could hold the lock", asked[0])
			}
		}
	})
}
