package algorithms

import "iter"

// allGatherDoubling is recursive doubling among the p' = floorPow2(p) ranks
// of DoublingPartner. For other sizes each extra rank first sends its block
// to its fold partner (DoublingFold) and receives every other block from it
// at the end, so rank g < p' stands for the group of blocks g and g+p' (see
// groupBlocks). In round k rank r and r XOR 2^k swap the runs of 2^k groups
// each has gathered, so after log2 p' rounds every rank of the p' holds all
// groups.
//
// Blocks are separate regions, so a run travels as one message per chunk of
// each of its non-empty blocks: p-1 blocks in and out, as in the ring, but
// over log2 p' dependent rounds instead of p-1. Every block is received
// straight into its place in Output.
func allGatherDoubling(b *Builder, s *Spec) {
	p, r, cs, c := s.Size, s.Rank, s.Counts, s.ChunkElems()
	pp, fold := floorPow2(p), DoublingFold(r, p)
	steps := totalChunks(cs, c) + 1 // the copy and the fold's messages
	if r < pp {
		steps += doublingChunks(cs, c, pp, r)
	}
	b.Grow(steps)
	own := allGatherOwn(b, s)
	blk := func(q int) Region {
		if q == r {
			return own
		}
		return whole(Output, q, cs[q])
	}
	if r >= pp {
		// Extra rank: hand the block over, take all the others back.
		sendAll(b, c, fold, own)
		for q := range p {
			if q != r {
				recvAll(b, c, fold, blk(q))
			}
		}
		return
	}
	if fold >= 0 {
		recvAll(b, c, fold, blk(fold))
	}
	for k := range DoublingRounds(p) {
		peer, m := DoublingPartner(r, p, k), 1<<k
		for q := range groupBlocks(p, pp, r&^(m-1), m) {
			sendAll(b, c, peer, blk(q))
		}
		for q := range groupBlocks(p, pp, peer&^(m-1), m) {
			recvAll(b, c, peer, blk(q))
		}
	}
	if fold >= 0 {
		for q := range p {
			if q != fold {
				sendAll(b, c, fold, blk(q))
			}
		}
	}
}

// allGatherBruck is Bruck's algorithm: ceil(log2 p) rounds for any p, with
// no fold. Rank r keeps the blocks it has in positions, position i holding
// block r-i; in round k (d = 2^k, see DisseminationPartners) it sends
// positions [0, min(d, p-d)) to r+d and receives the same positions of
// rank r-d, which are its own positions d onwards. After the last round
// positions 0..p-1 are full.
//
// Bruck's contiguous buffer needs a final rotation from position to rank
// order. Here position i simply is Output block r-i, so every block lands in
// place and the rotation is the identity: nothing is copied but the rank's
// own block (out of place). A block is sent once per round it sits below
// position d, and received once: for equal blocks, p-1 blocks in and out.
func allGatherBruck(b *Builder, s *Spec) {
	p, r, cs, c := s.Size, s.Rank, s.Counts, s.ChunkElems()
	steps := totalChunks(cs, c) + 1
	for d := 1; d < p; d *= 2 {
		for i := range min(d, p-d) {
			steps += nchunks(cs[mod(r-i, p)], c)
		}
	}
	b.Grow(steps)
	own := allGatherOwn(b, s)
	at := func(i int) Region {
		if i == 0 {
			return own
		}
		q := mod(r-i, p)
		return whole(Output, q, cs[q])
	}
	for k := range DisseminationRounds(p) {
		to, from := DisseminationPartners(r, p, k)
		d := 1 << k
		for i := range min(d, p-d) {
			exchange(b, c, to, at(i), from, at(d+i), Region{}, false)
		}
	}
}

// allGatherOwn returns the region an all-gather sends its own block from.
// Out of place that is Input, so that sending need not wait for the copy
// into Output block Rank made here; in place it is Output block Rank.
func allGatherOwn(b *Builder, s *Spec) Region {
	n := s.Counts[s.Rank]
	out := whole(Output, s.Rank, n)
	if s.InPlace {
		return out
	}
	if n > 0 {
		b.Copy(out, whole(Input, 0, n))
	}
	return whole(Input, 0, n)
}

// groupBlocks yields the blocks of groups [lo, lo+n) when p ranks fold onto
// pp = floorPow2(p): group g is block g and, where extra rank g+pp exists,
// block g+pp. Both partners of a doubling or halving round walk a run in
// this order, which is what pairs their messages.
func groupBlocks(p, pp, lo, n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for q := lo; q < lo+n; q++ {
			if !yield(q) {
				return
			}
		}
		for q := lo + pp; q < min(lo+n+pp, p); q++ {
			if !yield(q) {
				return
			}
		}
	}
}

// doublingChunks is the number of messages rank r < pp sends and receives in
// the rounds of recursive doubling or halving over groups: in the round of
// distance m it sends one half of the aligned run of 2m groups holding r and
// receives the other.
func doublingChunks(cs []int, c, pp, r int) int {
	n := 0
	for m := 1; m < pp; m *= 2 {
		for q := range groupBlocks(len(cs), pp, r&^(2*m-1), 2*m) {
			n += nchunks(cs[q], c)
		}
	}
	return n
}
