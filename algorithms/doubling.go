package algorithms

// allReduceDoubling is recursive doubling: log2 p' rounds in which partners
// swap their whole partial result, after folding the extra ranks of a
// non-power-of-two size into partners (see DoublingFold). Few rounds, full
// tensor each: the choice for small tensors.
//
// Every rank's result is the same combination of the same operands (only the
// operand order of each ⊕ differs), so all ranks agree for any commutative
// operator.
func allReduceDoubling(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	b.Grow((2*DoublingRounds(p) + 2) * nchunks(n, c))
	out := whole(Output, 0, n)
	cur := whole(Input, 0, n)
	if s.InPlace {
		cur = out
	}
	fold := DoublingFold(r, p)
	if r >= floorPow2(p) {
		// Extra rank: hand the contribution over, take the result back.
		sendAll(b, c, fold, cur)
		recvAll(b, c, fold, out)
		return
	}
	if fold >= 0 {
		exchange(b, c, -1, Region{}, fold, out, cur, true)
		cur = out
	}
	for k := range DoublingRounds(p) {
		q := DoublingPartner(r, p, k)
		// With cur == out, each chunk's RecvReduce waits for the Send of
		// the same chunk (write after read): the partner must get the
		// partial from before this round.
		exchange(b, c, q, cur, q, out, cur, true)
		cur = out
	}
	if fold >= 0 {
		sendAll(b, c, fold, out)
	}
}
