package algorithms

import "slices"

// broadcastChain streams the tensor down a chain in virtual-rank order (root,
// root+1, …): each rank receives chunk j from its predecessor and passes it
// straight on to its successor, so with m chunks the last rank is done after
// p-1+m-1 hops. Every link carries the tensor exactly once, where
// broadcastTree's root sends all of it to each of its log2 p children: the
// chain trades latency for bandwidth, and suits large tensors cut into many
// chunks.
func broadcastChain(b *Builder, s *Spec) {
	p, n, c := s.Size, s.Counts[0], s.ChunkElems()
	v := virtual(s.Rank, s.Root, p)
	b.Grow(2 * nchunks(n, c))
	out := whole(Output, 0, n)
	for j := range nchunks(n, c) {
		ch := piece(out, j, c)
		if v > 0 {
			b.Recv(actual(v-1, s.Root, p), ch)
		}
		if v < p-1 {
			b.Send(actual(v+1, s.Root, p), ch)
		}
	}
}

// broadcastScatterAllGather is van de Geijn's broadcast: the root scatters
// the tensor as p near-equal segments down the binomial tree, virtual rank u
// getting segment u, then a ring all-gather in virtual-rank order gives every
// rank the rest. Segments are empty when n < p; both ends of a link skip them
// alike.
//
// The scatter takes ceil(log2 p) rounds: a subtree is a contiguous range of
// virtual ranks (see TreeSubtree), so its segments are one run of Output
// that a parent sends and a child receives in place, with no staging. The
// ring takes p-1 steps; in step k virtual rank v passes segment v-k on and
// takes segment v-k-1 from its predecessor, except that no rank is sent a
// segment the scatter already gave it: its predecessor knows the tree too.
// So every rank receives each segment once, n elements in all, the root
// none, and no rank sends more than about 2n. The ring rather than
// recursive doubling: it works alike for any p and talks to two fixed
// neighbours, and its p-1 steps are no burden for the large tensors this
// algorithm is for.
func broadcastScatterAllGather(b *Builder, s *Spec) {
	p, root, n, c := s.Size, s.Root, s.Counts[0], s.ChunkElems()
	v := virtual(s.Rank, root, p)
	all := extent{n: n}
	segs := func(u, k int) Region { return all.part(p, u, k).on(Output) } // the segments of virtual ranks [u, u+k)
	subtree := func(u int) Region { return segs(u, span(u, p)) }
	holds := func(u, seg int) bool { return seg >= u && seg < u+span(u, p) } // after the scatter
	children := TreeChildren(s.Rank, root, p, nil)
	// The scatter receives at most n elements and sends at most n, one run
	// per child; the ring's segments take at most n/c chunks plus one per
	// non-empty segment, of which there are min(n, p), each way.
	b.Grow(4*nchunks(n, c) + len(children) + 2*min(n, p))
	if v > 0 {
		recvAll(b, c, TreeParent(s.Rank, root, p), subtree(v))
	}
	slices.Reverse(children) // largest subtree first: it has furthest to go
	for _, ch := range children {
		sendAll(b, c, ch, subtree(virtual(ch, root, p)))
	}
	next, prev := (v+1)%p, mod(v-1, p)
	for k := range p - 1 {
		var out, in Region // empty: skipped
		if seg := mod(v-k, p); !holds(next, seg) {
			out = segs(seg, 1)
		}
		if seg := mod(v-k-1, p); !holds(v, seg) {
			in = segs(seg, 1)
		}
		exchange(b, c, actual(next, root, p), out, actual(prev, root, p), in, Region{}, false)
	}
}
