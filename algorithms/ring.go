package algorithms

// Ring algorithms move every block p-1 hops around RingNext, one block per
// step per link, chunked so that chunk j of step k+1 waits only for chunk j
// of step k.

// allReduceRing is a reduce-scatter followed by an all-gather around the
// ring of all ranks (see ring.allReduce).
func allReduceRing(b *Builder, s *Spec) {
	if s.Size == 1 {
		localReduce(b, s)
		return
	}
	g, n, c := worldRing(s), s.Counts[0], s.ChunkElems()
	b.Grow(g.allReduceSteps(n, c))
	g.allReduce(b, c, contribution(s), extent{n: n})
}

// ring is the ring of size ranks base, base+stride, …, in which position i
// sends to position i+1: every rank, or the ranks of one node (stride 1),
// or one rank per node (stride: ranks per node), so that the phases of a
// hierarchical all-reduce are the ring's own.
type ring struct {
	base, stride, size int
	pos                int // this rank's position
}

func worldRing(s *Spec) ring { return ring{stride: 1, size: s.Size, pos: s.Rank} }

// at is the rank at position i, modulo the ring.
func (g ring) at(i int) int { return g.base + g.stride*mod(i, g.size) }

// seg is segment i, modulo the ring, of g.size near-equal segments of e.
func (g ring) seg(e extent, buf Buffer, i int) Region {
	return e.part(g.size, mod(i, g.size), 1).on(buf)
}

// allReduceSteps bounds the steps allReduce takes over n elements.
func (g ring) allReduceSteps(n, c int) int {
	return 4 * (g.size - 1) * nchunks(n/g.size+1, c)
}

// allReduce is a reduce-scatter followed by an all-gather over g.size
// near-equal segments of e, among the ring's ranks. src holds this rank's
// contribution: Input, or Output when in place or when an earlier phase
// left a partial there. With a ring of one, nothing moves and the
// contribution stays in src.
func (g ring) allReduce(b *Builder, c int, src Buffer, e extent) {
	g.reduceScatter(b, c, src, e)
	g.allGather(b, c, e)
}

// reduceScatter: in step k position i sends segment i-k and folds segment
// i-k-1 from its predecessor into Output, with src as the local operand: no
// initial copy. After size-1 steps position i holds the total of segment
// i+1 in Output.
func (g ring) reduceScatter(b *Builder, c int, src Buffer, e extent) {
	next, prev := g.at(g.pos+1), g.at(g.pos-1)
	for k := range g.size - 1 {
		from := Output
		if k == 0 {
			from = src // own contribution, untouched so far
		}
		rs := g.pos - k - 1
		exchange(b, c, next, g.seg(e, from, g.pos-k), prev, g.seg(e, Output, rs), g.seg(e, src, rs), true)
	}
}

// allGather passes the totals reduceScatter left on: in step k position i
// forwards segment i+1-k and receives segment i-k.
func (g ring) allGather(b *Builder, c int, e extent) {
	next, prev := g.at(g.pos+1), g.at(g.pos-1)
	for k := range g.size - 1 {
		exchange(b, c, next, g.seg(e, Output, g.pos+1-k), prev, g.seg(e, Output, g.pos-k), Region{}, false)
	}
}

// contribution is the buffer holding this rank's all-reduce operand.
func contribution(s *Spec) Buffer {
	if s.InPlace {
		return Output
	}
	return Input
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
	scratch := [2]int32{-1, -1}
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
