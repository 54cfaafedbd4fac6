package algorithms

import (
	"fmt"
	"testing"
)

// TestAcknowledgedPairsEveryEdge: with tokens added, every rank of every
// collective receives from each peer it sends to, and the schedules still
// pair up, send for receive, tag for tag, length for length.
func TestAcknowledgedPairsEveryEdge(t *testing.T) {
	for _, kind := range Kinds() {
		for size := 1; size <= 9; size++ {
			t.Run(fmt.Sprintf("%v/%d", kind, size), func(t *testing.T) {
				for _, cc := range countCases(kind, size) {
					specs := EveryRank(Spec{Kind: kind, Size: size, Root: size / 2, Counts: cc.counts,
						SendCounts: uniformIf(kind == AllToAll, size), RecvCounts: uniformIf(kind == AllToAll, size), ElemSize: 4})
					checkAcknowledged(t, specs)
				}
			})
		}
	}
}

func checkAcknowledged(t *testing.T, specs []Spec) {
	t.Helper()
	scheds, err := buildAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	for r, s := range scheds {
		scheds[r] = Acknowledged(s)
		hears := map[int]bool{}
		for _, st := range scheds[r].Steps {
			if st.Prim.Receives() {
				hears[st.Peer] = true
			}
		}
		for _, st := range scheds[r].Steps {
			if st.Prim == Send && !hears[st.Peer] {
				t.Fatalf("%v: rank %d sends to %d and never hears from it", specs[r].Counts, r, st.Peer)
			}
		}
	}
	// checkStatic allows tokens in barriers only: pair the messages here.
	type edge struct{ from, to, tag int }
	lengths := map[edge]int{}
	for r, s := range scheds {
		for _, st := range s.Steps {
			switch {
			case st.Prim == Send:
				lengths[edge{r, st.Peer, st.Tag}] += st.Src.Len + 1
			case st.Prim.Receives():
				lengths[edge{st.Peer, r, st.Tag}] -= st.Dst.Len + 1
			}
		}
	}
	for e, n := range lengths {
		if n != 0 {
			t.Fatalf("%v: message %d→%d tag %d is sent and received unalike", specs[0].Counts, e.from, e.to, e.tag)
		}
	}
}
