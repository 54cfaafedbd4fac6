package algorithms

// The double binary tree, after NCCL's. Tree 0 is the in-order binary tree
// over positions 1..size (rank r at position r+1): position v with lowest
// set bit h has children v-h/2 and v+h/2 (the right one, when past size,
// replaced by the first of v+h/4, v+h/8, … in range), and the root is the
// largest power of two not above size. For size 12:
//
//	              8
//	        ┌─────┴─────┐
//	        4           12
//	    ┌───┴───┐      ┌┘
//	    2       6      10
//	  ┌─┴─┐   ┌─┴─┐  ┌─┴─┐
//	  1   3   5   7  9   11
//
// Odd positions are the leaves, even ones interior. Tree 1 is tree 0
// shifted by one rank: rank r takes the place of rank r+1 (mod size). So a
// rank interior in one tree is a leaf in the other, except rank size-1,
// which is a leaf in both when size is odd: every rank forwards for at most
// one tree, and each tree carries half the tensor. Numbering from 1 gives
// the root two children; NCCL numbers from 0, so its root has one, and
// mirrors the tree for even sizes and shifts it for odd ones, where rank 0
// then forwards in both trees.

// dtree is one rank's place in one tree of the double binary tree.
type dtree struct {
	parent   int   // -1 at the root
	children []int // smaller subtree first: at most two
}

func newDtree(rank, size, t int) dtree {
	toRank := func(v int) int { return mod(v-1-t, size) }
	v := (rank+t)%size + 1
	d := dtree{parent: -1}
	if u := inorderParent(v, size); u > 0 {
		d.parent = toRank(u)
	}
	left, right := inorderChildren(v, size)
	for _, u := range [2]int{right, left} {
		if u > 0 {
			d.children = append(d.children, toRank(u))
		}
	}
	return d
}

// inorderParent is the parent of position v in the in-order tree over
// 1..size, or 0 at the root. A left child (bit 2h of v clear) hangs below
// v+h, a right child below v-h; a left child whose parent would lie past
// size is the clipped right child of v-h instead.
func inorderParent(v, size int) int {
	h := v & -v
	if v&(h<<1) == 0 && v+h <= size {
		return v + h
	}
	return v - h
}

// inorderChildren are the children of position v, 0 where there is none.
// The left subtree is always full; the right one is cut at size.
func inorderChildren(v, size int) (left, right int) {
	half := (v & -v) >> 1
	if half == 0 {
		return 0, 0
	}
	h := half
	for v+h > size {
		h >>= 1
	}
	if h > 0 {
		right = v + h
	}
	return v - half, right
}

// allReduceDoubleTree splits the tensor in two halves and all-reduces half t
// over tree t of the double binary tree: each chunk is reduced up the tree,
// children folded in smaller subtree first, and broadcast back down from the
// root, larger subtree first. Chunk j of a rank's part goes to its parent as
// soon as its children's chunk j is folded in and goes down as soon as it
// comes back, so a large tensor streams through both trees at once: 2·depth
// hops, about 2·log2 p, whatever the number of chunks. Each rank sends and
// receives at most 2n elements (interior in one tree, leaf in the other)
// against the ring's 2n(p-1)/p, in O(log p) hops rather than 2(p-1).
//
// Every result is computed once, by the root of its tree, and copied down,
// so every rank ends with the same bits.
func allReduceDoubleTree(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	src := contribution(s)
	var (
		trees  [2]dtree
		halves [2]extent
		steps  int
	)
	for t := range trees {
		trees[t] = newDtree(r, p, t)
		halves[t] = extent{n: n}.part(2, t, 1)
		steps += nchunks(halves[t].n, c) * (2 + 2*len(trees[t].children))
	}
	b.Grow(steps)
	// Half 0 is the longer. Both ends of a link visit (chunk, tree) in this
	// order and exchange at most one message per visit, so tags match even
	// where the two trees share a link.
	for j := range nchunks(halves[0].n, c) {
		for t, h := range halves {
			if j < nchunks(h.n, c) {
				trees[t].chunk(b, piece(h.on(src), j, c), piece(h.on(Output), j, c))
			}
		}
	}
}

// chunk all-reduces one chunk over the tree: in is this rank's contribution,
// out where the partial sum and then the result go.
func (d *dtree) chunk(b *Builder, in, out Region) {
	cur := in
	for _, ch := range d.children {
		b.RecvReduce(ch, out, cur)
		cur = out
	}
	if d.parent >= 0 {
		b.Send(d.parent, cur)
		b.Recv(d.parent, out)
	}
	for i := len(d.children) - 1; i >= 0; i-- {
		b.Send(d.children[i], out)
	}
}
