package collective

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/algorithms"
)

// TestRunsLetGoOfEachPeer completes an all-reduce schedule's steps in an
// order its dependencies allow, drawn at random, and checks what a lazy
// collective lets go of: each peer once for good, after its last step
// and at no other time; a peer between two of its runs only with a
// send to it left, which links it again; a ring's neighbours never
// before the end.
func TestRunsLetGoOfEachPeer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		algo := rapid.SampledFrom([]string{"ring", "recursive_doubling", "rabenseifner", "double_binary_tree"}).Draw(t, "algo")
		size := rapid.IntRange(1, 40).Draw(t, "size")
		rank := rapid.IntRange(0, size-1).Draw(t, "rank")
		s, err := algorithms.Build(algorithms.Spec{
			Kind: algorithms.AllReduce, Rank: rank, Size: size, Counts: []int{rapid.IntRange(0, 5000).Draw(t, "count")},
			ElemSize: 4, InPlace: true, Algorithm: algo,
		})
		if err != nil {
			t.Fatal(err)
		}
		var peers []int
		for _, st := range s.Steps {
			if st.Peer >= 0 && !slices.Contains(peers, st.Peer) {
				peers = append(peers, st.Peer)
			}
		}
		slices.Sort(peers)
		index := func(peer int) int { i, _ := slices.BinarySearch(peers, peer); return i }
		var rs runs
		rs.plan(s, len(peers), index)

		left := make([]int, len(peers)) // steps not complete, by peer
		for _, st := range s.Steps {
			if st.Peer >= 0 {
				left[index(st.Peer)]++
			}
		}
		final := make([]bool, len(peers))
		prog := algorithms.NewProgress(s)
		for _, st := range s.Steps { // every frame came
			if st.Prim.Receives() {
				prog.Arrive(st.Peer, st.Tag, nil)
			}
		}
		ready := prog.Start(nil)
		done := make([]bool, len(s.Steps))
		for len(ready) > 0 {
			k := rapid.IntRange(0, len(ready)-1).Draw(t, "next")
			i := ready[k]
			ready = slices.Delete(ready, k, k+1)
			ready = prog.Complete(i, ready)
			done[i] = true
			if s.Steps[i].Peer >= 0 {
				left[index(s.Steps[i].Peer)]--
			}
			p, isFinal, release := rs.complete(i)
			if !release {
				continue
			}
			switch {
			case s.Steps[i].Peer < 0:
				t.Fatalf("step %d, with no peer, let go of peer %d", i, p)
			case peers[p] != s.Steps[i].Peer:
				t.Fatalf("step %d with rank %d let go of rank %d", i, s.Steps[i].Peer, peers[p])
			case final[p]:
				t.Fatalf("rank %d let go of for good twice", peers[p])
			case isFinal != (left[p] == 0):
				t.Fatalf("rank %d let go of, final %v, with %d steps left", peers[p], isFinal, left[p])
			case !isFinal && algo == "ring":
				t.Fatalf("a ring let go of its neighbour %d between its steps", peers[p])
			case !isFinal && !sendsLater(s, done, peers[p]):
				t.Fatalf("rank %d let go of with no send to it left to link it again", peers[p])
			}
			final[p] = isFinal
		}
		if !prog.Done() {
			t.Fatalf("the schedule did not complete")
		}
		for p, f := range final {
			if !f {
				t.Fatalf("rank %d never let go of", peers[p])
			}
		}
	})
}

// sendsLater reports whether a step of s not done yet sends to peer.
func sendsLater(s *algorithms.Schedule, done []bool, peer int) bool {
	for i, st := range s.Steps {
		if st.Prim == algorithms.Send && st.Peer == peer && !done[i] {
			return true
		}
	}
	return false
}
