package algorithms

import (
	"cmp"
	"slices"
)

// Acknowledged returns s with a zero-byte message added to each edge that
// carries messages one way only: the rank sends a token to every peer it
// receives from and never sends to, and waits for one from every peer it
// sends to and never receives from. Every rank then hears from each peer
// it talks to, so an executor that checks what arrives sees a peer's
// mismatched call even where s alone only sends (a broadcast's root, a
// reduction's leaves), instead of finishing with its own data; and such a
// sender finishes once its receivers have started. The tokens depend on
// nothing, so they travel while the data does. s itself is returned when
// every edge goes both ways.
func Acknowledged(s *Schedule) *Schedule {
	// Each peer's edge, from its first step: sorted by peer, then by step,
	// rather than in maps, which every rank of a simulation would build.
	type edge struct {
		peer, first  int
		sends, recvs bool
	}
	edges := make([]edge, 0, len(s.Steps))
	for i, st := range s.Steps {
		if st.Prim == Send || st.Prim.Receives() {
			edges = append(edges, edge{peer: st.Peer, first: i, sends: st.Prim == Send, recvs: st.Prim.Receives()})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.peer, b.peer), cmp.Compare(a.first, b.first)) })
	oneWay := edges[:0]
	for i := 0; i < len(edges); {
		e := edges[i]
		for i++; i < len(edges) && edges[i].peer == e.peer; i++ {
			e.sends, e.recvs = e.sends || edges[i].sends, e.recvs || edges[i].recvs
		}
		if e.sends != e.recvs {
			oneWay = append(oneWay, e)
		}
	}
	if len(oneWay) == 0 {
		return s
	}
	// In step order, so that the tokens follow the schedule's order.
	slices.SortFunc(oneWay, func(a, b edge) int { return cmp.Compare(a.first, b.first) })
	a := &Schedule{Algorithm: s.Algorithm, Rank: s.Rank, Size: s.Size}
	a.Steps = append(make([]Step, 0, len(s.Steps)+len(oneWay)), s.Steps...)
	token := Region{Buf: Scratch, Block: int32(len(s.Scratch))}
	for _, e := range oneWay {
		if e.sends {
			a.Steps = append(a.Steps, Step{Prim: Recv, Peer: e.peer, Dst: token})
		} else {
			a.Steps = append(a.Steps, Step{Prim: Send, Peer: e.peer, Src: token})
		}
	}
	a.Scratch = append(append(make([]int, 0, len(s.Scratch)+1), s.Scratch...), 0)
	return a
}
