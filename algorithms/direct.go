package algorithms

// allReduceDirect is the one-shot all-reduce: every rank sends its whole
// tensor to every other rank in one round and reduces the p copies
// itself. One message latency against the ring's 2(p-1) and recursive
// doubling's log2 p, for (p-1)·n elements sent and received per rank: the
// choice for small tensors over few ranks.
//
// Every rank reduces chunk by chunk in rank order, in0 ⊕ in1 ⊕ … ⊕
// in(p-1), its own input taking its place through Accumulate, so every
// rank ends with the same bits, floating point included. The sends go
// out first, rank r+1, r+2, … onwards, so that no two ranks start on the
// same peer.
func allReduceDirect(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	if n == 0 {
		return
	}
	b.Grow(nchunks(n, c) * 2 * p)
	out := whole(Output, 0, n)
	in := whole(Input, 0, n)
	if s.InPlace {
		// The reduction overwrites Output before this rank's turn in the
		// order comes: keep the input aside.
		in = whole(Scratch, b.Scratch(n), n)
		b.Copy(in, out)
	}
	for j := range nchunks(n, c) {
		mine := piece(in, j, c)
		for k := 1; k < p; k++ {
			b.Send((r+k)%p, mine)
		}
		acc := piece(out, j, c)
		for q := range p {
			switch {
			case q == 0 && r == 0:
				b.Copy(acc, mine)
			case q == 0:
				b.Recv(0, acc)
			case q == r:
				b.Accumulate(acc, mine)
			default:
				b.RecvReduce(q, acc, acc)
			}
		}
	}
}
