package algorithms

// allReduceHalving is Rabenseifner's algorithm: a reduce-scatter by
// recursive halving, then an all-gather by recursive doubling, among the
// p' = floorPow2(p) ranks left once the extra ranks have folded into
// partners as in allReduceDoubling.
//
// The tensor is cut into p' near-equal segments. In halving round k rank r
// and its partner DoublingPartner(r, p, k) hold the same run of segments;
// each sends the half the other keeps and folds the incoming copy of its own
// half in, so after log2 p' rounds rank r holds the total of one segment (the
// bit reversal of r: bit k picks the upper half in round k). The all-gather
// replays the rounds backwards, each rank sending everything it has to the
// partner that lacks it. That is 2·log2 p' rounds, like recursive doubling,
// in which each rank sends and receives 2(p'-1)/p' of the tensor, like the
// ring. Each segment's total is computed once, by its owner, and copied to
// the others, so every rank ends with the same bits.
//
// A rank of the p' takes 4·log2 p' steps plus about 4n/c more for chunks of
// c elements (2n/c more if it folds), an extra rank 2n/c: O(log p) whatever
// the tensor. Segments, and so halves, are empty when n < p'; both partners
// know it and skip them alike.
func allReduceHalving(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	out := whole(Output, 0, n)
	cur := whole(Input, 0, n)
	if s.InPlace {
		cur = out
	}
	pp, rounds, fold := floorPow2(p), DoublingRounds(p), DoublingFold(r, p)
	if r >= pp {
		// Extra rank: hand the contribution over, take the result back.
		b.Grow(2 * nchunks(n, c))
		sendAll(b, c, fold, cur)
		recvAll(b, c, fold, out)
		return
	}
	// Each phase sends and receives at most n elements in pieces of one
	// half per round, so at most nchunks(n, c)+rounds messages each way.
	steps := 4 * (nchunks(n, c) + rounds)
	if fold >= 0 {
		steps += 2 * nchunks(n, c)
	}
	b.Grow(steps)
	if fold >= 0 {
		exchange(b, c, -1, Region{}, fold, out, cur, true)
		cur = out
	}
	all := extent{n: n}
	segs := func(buf Buffer, lo, k int) Region { return all.part(pp, lo, k).on(buf) }
	// This rank's segments are [lo, lo+size): the run it still reduces, then
	// the run it has gathered.
	lo, size := 0, pp
	for k := range rounds {
		peer := DoublingPartner(r, p, k)
		size /= 2
		keep, give := lo, lo+size
		if r>>k&1 == 1 {
			keep, give = give, keep
		}
		// The halves are disjoint: with cur == out, sending one need not
		// wait for reducing the other.
		exchange(b, c, peer, segs(cur.Buf, give, size), peer, segs(Output, keep, size), segs(cur.Buf, keep, size), true)
		cur, lo = out, keep
	}
	for k := rounds - 1; k >= 0; k-- {
		peer := DoublingPartner(r, p, k)
		// lo's bit of weight size is r's bit k (the half kept in round k),
		// so the partner's run is lo with that bit flipped.
		other := lo ^ size
		exchange(b, c, peer, segs(Output, lo, size), peer, segs(Output, other, size), Region{}, false)
		lo, size = min(lo, other), 2*size
	}
	if fold >= 0 {
		sendAll(b, c, fold, out)
	}
}
