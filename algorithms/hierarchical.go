package algorithms

// allReduceHierarchical is a two-level all-reduce for N nodes of
// L = Spec.LocalSize ranks each, numbered node by node, in three ring
// phases (see ring):
//
//  1. reduce-scatter among the L ranks of each node: local rank i ends with
//     the node's total of segment i+1 (mod L) of the tensor;
//  2. all-reduce of that segment among the N ranks with local index i, one
//     per node: the global total;
//  3. all-gather among the L ranks of each node.
//
// Only a 1/L share of the tensor leaves each rank's node, 2(N-1)/N·n/L
// elements each way per rank, and the L ranks of a node drive their L
// inter-node rings at once; inside the node each rank moves 2(L-1)/L·n. The
// rounds drop from the flat ring's 2(p-1) to 2(L-1) + 2(N-1). All three
// phases are rings: the hierarchy pays off for tensors large enough to be
// bandwidth-bound, where the ring is optimal and, unlike recursive halving,
// needs no fold for a node count that is not a power of two.
//
// Chunks pipeline across phases: a chunk of phase 2 waits only for the
// chunks of phase 1 that wrote its elements.
//
// An unknown LocalSize (0, or one that does not divide Size) counts as one
// node of every rank, which makes this the plain ring all-reduce.
func allReduceHierarchical(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.Counts[0], s.ChunkElems()
	if p == 1 {
		localReduce(b, s)
		return
	}
	l := s.LocalSize
	if l == 0 || p%l != 0 {
		l = p
	}
	node, local := r/l, r%l
	intra := ring{base: node * l, stride: 1, size: l, pos: local}
	inter := ring{base: local, stride: l, size: p / l, pos: node}
	all := extent{n: n}
	shard := all.part(l, mod(local+1, l), 1)
	b.Grow(intra.allReduceSteps(n, c) + inter.allReduceSteps(shard.n, c))
	src := contribution(s)
	intra.reduceScatter(b, c, src, all)
	if l > 1 {
		src = Output // the node's partial of shard
	}
	inter.allReduce(b, c, src, shard)
	intra.allGather(b, c, all)
}
