package algorithms

import "slices"

// Binomial-tree algorithms (see TreeParent for the shape). Every message is
// chunked and every forwarded chunk waits only for its own arrival, so a large
// tensor streams down (or up) the tree instead of hopping level by level.

// reduceTree: each rank folds its children's partials into an accumulator,
// smallest subtree first, and passes the result to its parent. The root
// accumulates in Output; other ranks with children in a Scratch block. The
// first fold of each chunk reads Input as the local operand, so nothing is
// copied; a leaf sends its Input as is.
func reduceTree(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if n == 0 {
		return
	}
	parent := TreeParent(r, s.Root, p)
	children := TreeChildren(r, s.Root, p, nil)
	b.Grow(nchunks(n, c) * (len(children) + 1))
	in := whole(Input, 0, n)
	var acc Region
	switch {
	case parent < 0:
		acc = whole(Output, 0, n)
		if s.InPlace {
			in = acc
		}
	case len(children) > 0:
		acc = whole(Scratch, b.Scratch(n), n)
	}
	for j := range nchunks(n, c) {
		cur := piece(in, j, c)
		for _, ch := range children {
			dst := piece(acc, j, c)
			b.RecvReduce(ch, dst, cur)
			cur = dst
		}
		if parent >= 0 {
			b.Send(parent, cur)
		} else if dst := piece(acc, j, c); cur != dst {
			b.Copy(dst, cur) // a root without children: size 1
		}
	}
}

// broadcastTree: each rank receives a chunk from its parent and passes it to
// its children, largest subtree first since that one has furthest to go.
func broadcastTree(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	parent := TreeParent(r, s.Root, p)
	children := TreeChildren(r, s.Root, p, nil)
	slices.Reverse(children)
	b.Grow(nchunks(n, c) * (len(children) + 1))
	out := whole(Output, 0, n)
	for j := range nchunks(n, c) {
		ch := piece(out, j, c)
		if parent >= 0 {
			b.Recv(parent, ch)
		}
		for _, child := range children {
			b.Send(child, ch)
		}
	}
}

// staging lays out, in one Scratch block, the blocks of the virtual ranks
// (v, v+span) that a non-root gather or scatter rank relays.
type staging struct {
	v, root, size int
	counts        []int
	block         int32
	offs          []int // offs[u-v-1] is the offset of virtual rank u's block
}

func newStaging(b *Builder, s *Spec, v int) *staging {
	st := &staging{v: v, root: s.Root, size: s.Size, counts: s.Counts, block: -1}
	total := 0
	for u := v + 1; u < v+span(v, s.Size); u++ {
		st.offs = append(st.offs, total)
		total += s.Counts[actual(u, s.Root, s.Size)]
	}
	if total > 0 {
		st.block = b.Scratch(total)
	}
	return st
}

// at is where virtual rank u's block is staged.
func (st *staging) at(u int) Region {
	return Region{Buf: Scratch, Block: st.block, Off: st.offs[u-st.v-1], Len: st.counts[actual(u, st.root, st.size)]}
}

// subtreeBlocks returns where the rank at virtual rank v holds virtual rank
// u's block while it relays it: the root holds every block in place, in
// buf, and any other rank stages its descendants' blocks in Scratch.
func subtreeBlocks(b *Builder, s *Spec, v int, buf Buffer) func(u int) Region {
	if v == 0 {
		return func(u int) Region { q := actual(u, s.Root, s.Size); return whole(buf, q, s.Counts[q]) }
	}
	return newStaging(b, s, v).at
}

// gatherTree: each rank collects its subtree's blocks, in virtual-rank order,
// and forwards them whole to its parent: its own block straight from Input,
// descendants' blocks from Scratch. The root receives into Output directly.
func gatherTree(b *Builder, s *Spec) {
	p, r, root, cs, c := s.Size, s.Rank, s.Root, s.Counts, s.ChunkElems()
	v := virtual(r, root, p)
	b.Grow(2 * totalChunks(cs, c))
	dest := subtreeBlocks(b, s, v, Output)
	for _, child := range TreeChildren(r, root, p, nil) {
		cv := virtual(child, root, p)
		for u := cv; u < cv+span(cv, p); u++ {
			recvAll(b, c, child, dest(u))
		}
	}
	if v == 0 {
		if cs[r] > 0 {
			b.Copy(whole(Output, r, cs[r]), whole(Input, 0, cs[r]))
		}
		return
	}
	parent := TreeParent(r, root, p)
	sendAll(b, c, parent, whole(Input, 0, cs[r]))
	for u := v + 1; u < v+span(v, p); u++ {
		sendAll(b, c, parent, dest(u))
	}
}

// scatterTree mirrors gatherTree: each rank receives its subtree's blocks in
// virtual-rank order, keeps its own in Output, stages the rest in Scratch
// and forwards each child its subtree, largest first. The root sends from
// Input directly.
func scatterTree(b *Builder, s *Spec) {
	p, r, root, cs, c := s.Size, s.Rank, s.Root, s.Counts, s.ChunkElems()
	v := virtual(r, root, p)
	b.Grow(2 * totalChunks(cs, c))
	src := subtreeBlocks(b, s, v, Input)
	if v == 0 {
		if cs[r] > 0 {
			b.Copy(whole(Output, 0, cs[r]), src(0))
		}
	} else {
		parent := TreeParent(r, root, p)
		recvAll(b, c, parent, whole(Output, 0, cs[r]))
		for u := v + 1; u < v+span(v, p); u++ {
			recvAll(b, c, parent, src(u))
		}
	}
	children := TreeChildren(r, root, p, nil)
	slices.Reverse(children)
	for _, child := range children {
		cv := virtual(child, root, p)
		for u := cv; u < cv+span(cv, p); u++ {
			sendAll(b, c, child, src(u))
		}
	}
}
