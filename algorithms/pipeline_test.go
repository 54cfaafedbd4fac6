package algorithms

import (
	"fmt"
	"testing"
)

// criticalPath is the longest chain of steps through all ranks' schedules,
// following deps within a rank and each message from its Send to its receive.
// It also proves the combined graph acyclic (no deadlock under any order).
func criticalPath(t *testing.T, scheds []*Schedule) int {
	t.Helper()
	type node struct{ rank, step int }
	recvOf := map[msgKey]node{}
	for r, sc := range scheds {
		for i, st := range sc.Steps {
			if st.Prim.Receives() {
				recvOf[msgKey{from: st.Peer, to: r, tag: st.Tag}] = node{r, i}
			}
		}
	}
	// Incoming edges of each receive: its matching send.
	sendOf := map[node]node{}
	for r, sc := range scheds {
		for i, st := range sc.Steps {
			if st.Prim == Send {
				sendOf[recvOf[msgKey{from: r, to: st.Peer, tag: st.Tag}]] = node{r, i}
			}
		}
	}
	depth := map[node]int{}
	visiting := map[node]bool{}
	var visit func(n node) int
	visit = func(n node) int {
		if d, ok := depth[n]; ok {
			return d
		}
		if visiting[n] {
			t.Fatalf("cycle through rank %d step %d", n.rank, n.step)
		}
		visiting[n] = true
		d := 0
		for _, dep := range scheds[n.rank].Steps[n.step].Deps {
			d = max(d, visit(node{n.rank, int(dep)}))
		}
		if s, ok := sendOf[n]; ok {
			d = max(d, visit(s))
		}
		depth[n] = d + 1
		return d + 1
	}
	longest := 0
	for r, sc := range scheds {
		for i := range sc.Steps {
			longest = max(longest, visit(node{r, i}))
		}
	}
	return longest
}

// TestPipelining checks that chunking pipelines: chunk j of round k+1 waits
// only for chunk j of round k (and its message), so the critical path through
// all ranks is set by the rounds alone, whatever the number of chunks.
// Without pipelining it would grow like rounds × chunks.
func TestPipelining(t *testing.T) {
	const chunks = 32
	for _, tc := range []struct {
		kind   Kind
		alg    string
		p      int
		rounds int // message hops on the longest chain
	}{
		{AllReduce, "ring", 8, 2 * 7},
		{AllReduce, "recursive_doubling", 8, 3},
		{AllReduce, "recursive_doubling", 6, 2 + 2}, // fold and unfold
		{AllReduce, "rabenseifner", 8, 2 * 3},
		{AllReduce, "rabenseifner", 6, 2*2 + 2},
		{Reduce, "binomial", 8, 3},
		{Broadcast, "binomial", 8, 3},
		{AllGather, "ring", 8, 7},
		{ReduceScatter, "ring", 8, 7},
		{Gather, "binomial", 8, 3},
		{Scatter, "binomial", 8, 3},
	} {
		t.Run(fmt.Sprintf("%v/%s/p=%d", tc.kind, tc.alg, tc.p), func(t *testing.T) {
			base := Spec{Kind: tc.kind, Size: tc.p, ElemSize: 1, ChunkBytes: 1, Algorithm: tc.alg}
			switch tc.kind {
			case AllReduce:
				base.Counts = []int{tc.p * chunks}
			case Reduce, Broadcast:
				base.Counts = []int{chunks}
			default:
				base.Counts = uniform(tc.p, chunks)
			}
			scheds, err := buildAll(specsFor(base, nil))
			if err != nil {
				t.Fatal(err)
			}
			// Each hop is a send and its receive; a final local copy may
			// follow.
			if got, bound := criticalPath(t, scheds), 2*tc.rounds+1; got > bound {
				t.Errorf("critical path %d steps, want at most %d for %d rounds of %d chunks", got, bound, tc.rounds, chunks)
			}
		})
	}
}
