package algorithms

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
	sends, recvs := map[int]bool{}, map[int]bool{}
	for _, st := range s.Steps {
		switch {
		case st.Prim == Send:
			sends[st.Peer] = true
		case st.Prim.Receives():
			recvs[st.Peer] = true
		}
	}
	var extra []Step
	token := Region{Buf: Scratch, Block: int32(len(s.Scratch))}
	// In step order, so that the result does not depend on map order.
	seen := map[int]bool{}
	for _, st := range s.Steps {
		if st.Prim == Copy || st.Prim == Accumulate || seen[st.Peer] {
			continue
		}
		seen[st.Peer] = true
		switch {
		case sends[st.Peer] && !recvs[st.Peer]:
			extra = append(extra, Step{Prim: Recv, Peer: st.Peer, Dst: token})
		case recvs[st.Peer] && !sends[st.Peer]:
			extra = append(extra, Step{Prim: Send, Peer: st.Peer, Src: token})
		}
	}
	if len(extra) == 0 {
		return s
	}
	a := &Schedule{Algorithm: s.Algorithm, Rank: s.Rank, Size: s.Size}
	a.Steps = append(append(make([]Step, 0, len(s.Steps)+len(extra)), s.Steps...), extra...)
	a.Scratch = append(append(make([]int, 0, len(s.Scratch)+1), s.Scratch...), 0)
	return a
}
