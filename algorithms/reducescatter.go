package algorithms

import "iter"

// reduceScatterHalving is recursive halving among the p' = floorPow2(p)
// ranks of DoublingPartner, over groups of blocks (see groupBlocks): rank
// g < p' is responsible for block g and, where extra rank g+p' exists, for
// block g+p'. Each extra rank first sends its whole input to its fold
// partner (DoublingFold), which folds it in, and gets its block's total back
// at the end.
//
// Rank r starts with all p' groups. In the round of distance m = p'/2, …, 1
// it and its partner r XOR m hold the same run of 2m groups; each sends the
// half holding the other and folds the incoming copy of its own half in, so
// after log2 p' rounds rank r holds the totals of group r. Halving by groups
// rather than by elements keeps every block whole on one side, whatever the
// counts. The rank's own block accumulates in Output, so nothing is copied
// at the end; the partials of the other blocks it holds live in one Scratch
// block: half the input, or all of it on a rank that folds. Each block
// leaves a rank at most once, one message per chunk: at a power of two,
// p-1 blocks out and, for equal blocks, as many in. A fold adds the extra
// rank's whole input to what its partner receives.
func reduceScatterHalving(b *Builder, s *Spec) {
	p, r, cs, c := s.Size, s.Rank, s.Counts, s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	pp, fold := floorPow2(p), DoublingFold(r, p)
	in := func(q int) Region { return whole(Input, q, cs[q]) }
	if r >= pp {
		// Extra rank: hand the contribution over, take the result back.
		b.Grow(totalChunks(cs, c) + nchunks(cs[r], c))
		for q := range p {
			sendAll(b, c, fold, in(q))
		}
		recvAll(b, c, fold, whole(Output, 0, cs[r]))
		return
	}
	steps := doublingChunks(cs, c, pp, r)
	// The partials this rank ever holds: every block after a fold, else the
	// half it keeps in the first round.
	lo, n := 0, pp
	if fold >= 0 {
		steps += 2 * totalChunks(cs, c)
	} else {
		n = pp / 2
		lo = r &^ (n - 1)
	}
	b.Grow(steps)
	acc := newPartials(b, s, groupBlocks(p, pp, lo, n))
	cur := in
	if fold >= 0 {
		for q := range p {
			exchange(b, c, -1, Region{}, fold, acc(q), in(q), true)
		}
		cur = acc
	}
	for k := DoublingRounds(p) - 1; k >= 0; k-- {
		peer, m := DoublingPartner(r, p, k), 1<<k
		for q := range groupBlocks(p, pp, peer&^(m-1), m) {
			sendAll(b, c, peer, cur(q))
		}
		for q := range groupBlocks(p, pp, r&^(m-1), m) {
			exchange(b, c, -1, Region{}, peer, acc(q), cur(q), true)
		}
		cur = acc
	}
	if fold >= 0 {
		sendAll(b, c, fold, acc(fold))
	}
}

// newPartials lays out, for the blocks that blocks yields, where a
// reduce-scatter accumulates their partial sums: the rank's own block in
// Output, the others one after another in a single Scratch block (none when
// they are all empty). The returned function maps a block to its region.
func newPartials(b *Builder, s *Spec, blocks iter.Seq[int]) func(q int) Region {
	r, cs := s.Rank, s.Counts
	offs := make([]int, len(cs))
	total := 0
	for q := range blocks {
		if q != r {
			offs[q] = total
			total += cs[q]
		}
	}
	scratch := int32(-1)
	if total > 0 {
		scratch = b.Scratch(total)
	}
	return func(q int) Region {
		if q == r {
			return whole(Output, 0, cs[r])
		}
		return Region{Buf: Scratch, Block: scratch, Off: offs[q], Len: cs[q]}
	}
}

// reduceScatterPairwise: in step k = 1..p-1 rank r sends its Input block r+k
// to rank r+k and folds rank r-k's contribution to block r into Output, the
// first fold reading its own Input block r, so nothing is copied. Sends
// depend on nothing and may all go at once; the folds of each chunk form a
// chain in step order, so rank r's result is always
// ((in_r ⊕ in_{r-1}) ⊕ in_{r-2}) ⊕ …, whatever the arrival order. That is
// p-1 messages (per chunk) in and out, each block crossing the network once:
// the fewest bytes, at the price of p-1 peers per rank.
func reduceScatterPairwise(b *Builder, s *Spec) {
	p, r, cs, c := s.Size, s.Rank, s.Counts, s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	b.Grow(totalChunks(cs, c) + (p-2)*nchunks(cs[r], c))
	out := whole(Output, 0, cs[r])
	local := whole(Input, r, cs[r])
	for k := 1; k < p; k++ {
		to, from := (r+k)%p, mod(r-k, p)
		exchange(b, c, to, whole(Input, to, cs[to]), from, out, local, true)
		local = out
	}
}
