package algorithms

// Ring algorithms move every block p-1 hops around RingNext, one block per
// step per link, chunked so that chunk j of step k+1 waits only for chunk j
// of step k.

// allReduceRing is a reduce-scatter followed by an all-gather over p
// near-equal segments of the tensor. In reduce-scatter step k rank r sends
// segment r-k and folds segment r-k-1 from its predecessor into Output, with
// its own Input as the local operand: no initial copy. After p-1 steps rank r
// holds the total of segment r+1, which the all-gather passes on.
func allReduceRing(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	src := Input
	if s.InPlace {
		src = Output
	}
	q, rem := n/p, n%p
	b.Grow(4 * (p - 1) * nchunks(q+1, c))
	seg := func(buf Buffer, i int) Region {
		ln := q
		if i < rem {
			ln++
		}
		return Region{Buf: buf, Off: i*q + min(i, rem), Len: ln}
	}
	next, prev := RingNext(r, p), RingPrev(r, p)
	for k := range p - 1 {
		from := Output
		if k == 0 {
			from = src // own contribution, untouched so far
		}
		rs := mod(r-k-1, p)
		exchange(b, c, next, seg(from, mod(r-k, p)), prev, seg(Output, rs), seg(src, rs), true)
	}
	for k := range p - 1 {
		exchange(b, c, next, seg(Output, mod(r+1-k, p)), prev, seg(Output, mod(r-k, p)), Region{}, false)
	}
}

// localReduce is a reduction over one rank: Output = Input.
func localReduce(b *Builder, s *Spec) {
	if n := s.Counts[0]; n > 0 && !s.InPlace {
		b.Copy(whole(Output, 0, n), whole(Input, 0, n))
	}
}

// allGatherRing: in step k rank r forwards block r-k (its own at k = 0, sent
// straight from Input) and receives block r-k-1. Blocks may differ in size
// (the V form); both neighbours know every count.
func allGatherRing(b *Builder, s *Spec) {
	p, r, cs, c := s.Size, s.Rank, s.Counts, s.ChunkElems()
	b.Grow(2*totalChunks(cs, c) + 1)
	blk := func(q int) Region { return whole(Output, q, cs[q]) }
	own := whole(Input, 0, cs[r])
	if s.InPlace {
		own = blk(r)
	} else if cs[r] > 0 {
		b.Copy(blk(r), own)
	}
	next, prev := RingNext(r, p), RingPrev(r, p)
	for k := range p - 1 {
		out := blk(mod(r-k, p))
		if k == 0 {
			out = own
		}
		exchange(b, c, next, out, prev, blk(mod(r-k-1, p)), Region{}, false)
	}
}

// reduceScatterRing: the partial sum of block q starts at rank q+1 and
// travels the ring, each rank folding in its own Input block q, until it
// ends at rank q after p-1 hops. In step k rank r forwards block r-k-1 and
// folds block r-k-2. Partials in transit live in two alternating Scratch
// blocks, so receiving step k+1 need not wait for sending step k.
func reduceScatterRing(b *Builder, s *Spec) {
	p, r, cs, c := s.Size, s.Rank, s.Counts, s.ChunkElems()
	if p == 1 {
		if cs[0] > 0 {
			b.Copy(whole(Output, 0, cs[0]), whole(Input, 0, cs[0]))
		}
		return
	}
	b.Grow(2 * totalChunks(cs, c))
	var need [2]int
	for k := range p - 2 {
		need[k%2] = max(need[k%2], cs[mod(r-k-2, p)])
	}
	scratch := [2]int{-1, -1}
	for i, n := range need {
		if n > 0 {
			scratch[i] = b.Scratch(n)
		}
	}
	next, prev := RingNext(r, p), RingPrev(r, p)
	for k := range p - 1 {
		sb, rb := mod(r-k-1, p), mod(r-k-2, p)
		out := whole(Input, sb, cs[sb])
		if k > 0 {
			out = whole(Scratch, scratch[(k-1)%2], cs[sb])
		}
		in := whole(Output, 0, cs[r])
		if k < p-2 {
			in = whole(Scratch, scratch[k%2], cs[rb])
		}
		exchange(b, c, next, out, prev, in, whole(Input, rb, cs[rb]), true)
	}
}
