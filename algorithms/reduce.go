package algorithms

// reduceHalving is Rabenseifner's reduce: the reduce-scatter of
// allReduceHalving (recursive halving among the p' = floorPow2(p) ranks left
// once the extra ranks have folded into partners), then a binomial gather of
// the reduced segments to the root where allReduceHalving all-gathers them.
// Ranks are numbered from the root (see virtual), so the root is rank 0 of
// the p' and never an extra one.
//
// The gather replays the halving rounds backwards: in round k, from the last
// to the first, a rank whose bit k is set sends the segments it has gathered,
// one contiguous run, to the partner that kept the other half in round k,
// and stops; that partner appends the run to its own. The root receives in
// every round. Every rank of the p' sends and receives (p'-1)/p' of the
// tensor while halving, and the root receives as much again while
// gathering: about 2n over 2·log2 p' rounds, where reduceTree's root folds
// in n from each of its log2 p children. That makes it the large-tensor
// reduce.
//
// Only the root has an Output. A non-root rank accumulates in a Scratch
// block covering only the half it keeps in round 0 (the whole tensor if it
// folds an extra rank in): every later run, halved or gathered, lies inside
// that half.
func reduceHalving(b *Builder, s *Spec) {
	p, n, c := s.Size, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	v := virtual(s.Rank, s.Root, p)
	rank := func(u int) int { return actual(u, s.Root, p) }
	pp, rounds, fold := floorPow2(p), DoublingRounds(p), DoublingFold(v, p)
	in := window{buf: Input}
	if v == 0 && s.InPlace {
		in.buf = Output
	}
	if v >= pp {
		// Extra rank: hand the contribution over.
		b.Grow(nchunks(n, c))
		sendAll(b, c, rank(fold), in.at(0, n))
		return
	}
	all := extent{n: n}
	off := func(seg int) int { return all.part(pp, seg, 0).off }                 // where segment seg starts
	segs := func(w window, lo, k int) Region { return w.at(off(lo), off(lo+k)) } // segments [lo, lo+k)
	acc := window{buf: Output}
	if v > 0 {
		lo, hi := 0, n
		if fold < 0 {
			half := pp / 2
			lo, hi = off(v&1*half), off(v&1*half+half)
		}
		acc = window{buf: Scratch, block: -1, base: lo}
		if hi > lo {
			acc.block = b.Scratch(hi - lo)
		}
	}
	// Halving sends at most n elements, one run per round, and so does the
	// gather. The nested halves kept while halving hold no more than n
	// elements each, and at most n+p' in all: segments differ by one.
	extra := pp
	if n < pp {
		extra = min(pp, n*rounds)
	}
	steps := 3*(nchunks(n, c)+rounds+1) + nchunks(extra, c)
	if fold >= 0 {
		steps += nchunks(n, c)
	}
	b.Grow(steps)
	cur := in
	if fold >= 0 {
		exchange(b, c, -1, Region{}, rank(fold), acc.at(0, n), in.at(0, n), true)
		cur = acc
	}
	lo, size := 0, pp
	for k := range rounds {
		peer := rank(DoublingPartner(v, p, k))
		size /= 2
		keep, give := lo, lo+size
		if v>>k&1 == 1 {
			keep, give = give, keep
		}
		exchange(b, c, peer, segs(cur, give, size), peer, segs(acc, keep, size), segs(cur, keep, size), true)
		cur, lo = acc, keep
	}
	for k := rounds - 1; k >= 0; k-- {
		peer := rank(DoublingPartner(v, p, k))
		if v>>k&1 == 1 {
			sendAll(b, c, peer, segs(acc, lo, size))
			return
		}
		// Bit k clear: this rank kept the lower half, the partner's run
		// follows its own.
		recvAll(b, c, peer, segs(acc, lo+size, size))
		size *= 2
	}
}

// window is a buffer seen through tensor offsets: it holds the elements from
// base on, so that a rank can keep part of a tensor without storing all of
// it.
type window struct {
	buf   Buffer
	block int32
	base  int
}

// at is the region of the tensor's elements [lo, hi).
func (w window) at(lo, hi int) Region {
	return Region{Buf: w.buf, Block: w.block, Off: lo - w.base, Len: hi - lo}
}
