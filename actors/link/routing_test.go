package link

import (
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
)

// TestRoutingHandsOverInOrderAndCounts drives a link's routing through
// drawn routes, arrivals, unroutes and discards, against a model that
// keeps every key's frames in one queue: each frame goes to the route its
// key had when it came (or when its route came, if it came first), in
// arrival order, a route takes no more than it counts, and nothing is
// handed over twice or lost.
func TestRoutingHandsOverInOrderAndCounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var rt routing
		keys := []Key{{Kind: transport.Collective, Seq: 1}, {Kind: transport.Collective, Seq: 2}, {Kind: transport.PointToPoint, Seq: 1, Tag: 3}}
		pids := []*actor.PID{{Id: "a"}, {Id: "b"}}
		got := map[*actor.PID][]int{}  // frame numbers handed to each actor
		want := map[*actor.PID][]int{} // the model's
		waiting := map[Key][]int{}     // the model's stash
		left := map[Key]int{}          // the model's routes' counts
		to := map[Key]*actor.PID{}     // the model's routes
		frame := func(n int) transport.Frame {
			return transport.Frame{Header: transport.Header{Seq: uint64(n)}}
		}
		next := 0
		for range rapid.IntRange(0, 100).Draw(t, "steps") {
			k := keys[rapid.IntRange(0, len(keys)-1).Draw(t, "key")]
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // a frame arrives
				n := next
				next++
				if pid, ok, ended := rt.take(k); ok {
					got[pid] = append(got[pid], n)
					if ended != (left[k] == 1) {
						t.Fatalf("route of %v ended %v with %d frames left before this one", k, ended, left[k])
					}
				} else {
					rt.keep(k, frame(n))
				}
				if left[k] > 0 {
					want[to[k]] = append(want[to[k]], n)
					left[k]--
				} else {
					waiting[k] = append(waiting[k], n)
				}
			case 1: // an operation routes the key
				pid := pids[rapid.IntRange(0, len(pids)-1).Draw(t, "pid")]
				frames := rapid.IntRange(1, 4).Draw(t, "frames")
				for _, f := range rt.add(k, pid, frames) {
					got[pid] = append(got[pid], int(f.Header.Seq))
				}
				n := min(frames, len(waiting[k]))
				want[pid] = append(want[pid], waiting[k][:n]...)
				waiting[k] = waiting[k][n:]
				to[k], left[k] = pid, frames-n
			case 2: // the operation ends early
				rt.unroute(k)
				left[k] = 0
			case 3: // stashed frames of the key are dropped
				rt.discard(func(d Key) bool { return d == k })
				waiting[k] = nil
			}
			for _, pid := range pids {
				if !slices.Equal(got[pid], want[pid]) {
					t.Fatalf("%s was handed %v, want %v", pid.Id, got[pid], want[pid])
				}
			}
			routed := 0
			for _, key := range keys {
				if left[key] > 0 {
					routed++
				}
			}
			if len(rt.routes) != routed {
				t.Fatalf("%d routes, want %d", len(rt.routes), routed)
			}
		}
	})
}
