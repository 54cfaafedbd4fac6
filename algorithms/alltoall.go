package algorithms

import "fmt"

// allToAllBruck is Bruck's all-to-all: ceil(log2 p) messages per rank (each
// chunked) where allToAllPairwise sends p-1, at the price of sending every
// block once per set bit of its distance, about log2(p)/2 times on average.
// It suits many ranks and small blocks, where messages cost more than bytes.
//
// Rank r numbers its blocks by distance: block i is the one it holds for
// rank r+i (the local rotation). In round k it sends every block whose index
// has bit k set to r+2^k and receives the blocks of the same indices from
// r-2^k, so each block advances by its distance one binary digit at a time,
// keeping its index. After the last round block i on rank r is the one from
// r-i, which the inverse rotation copies to Output block r-i.
//
// Input and Output blocks are separate regions, so a round's blocks share
// one message only once packed, in index order, into a Scratch send area.
// The rotations cost no copies of their own: a block is packed straight from
// Input for its first hop and copied to Output from wherever its last hop
// left it. Each round receives into a Scratch block of its own and nothing
// is moved after arriving, so consecutive indices stay adjacent and packing
// copies whole runs: about 3p copies in all, not one per block and hop. The
// price is scratch for every block on every hop, about n·p·log2(p)/2
// elements.
//
// Blocks pass through ranks that neither send nor receive them, and a rank
// knows only its own row and column of the count matrix, so the sizes of
// blocks in transit are known only when all counts are equal: Validate
// rejects other counts (see uniformCounts).
func allToAllBruck(b *Builder, s *Spec) {
	p, r, n, c := s.Size, s.Rank, s.SendCounts[0], s.ChunkElems()
	if n == 0 {
		return
	}
	rounds := DisseminationRounds(p)
	// Copies: its own block, p-1 packs from Input, at most p+rounds² packs
	// of runs received earlier, p-1 to Output.
	steps := 3*p + rounds*rounds
	for k := range rounds {
		steps += 2 * nchunks(carried(p, k)*n, c)
	}
	b.Grow(steps)
	b.Copy(whole(Output, r, n), whole(Input, r, n))
	if p == 1 {
		return
	}
	slot := func(block int32, j int) Region { return Region{Buf: Scratch, Block: block, Off: j * n, Len: n} }
	at := make([]Region, p) // where block i is now
	for i := 1; i < p; i++ {
		at[i] = whole(Input, (r+i)%p, n)
	}
	area := b.Scratch(p / 2 * n) // round 0 carries the most: the p/2 odd indices
	for k := range rounds {
		m := carried(p, k)
		recv := b.Scratch(m * n)
		var pk packer
		for i, j := 1, 0; i < p; i++ {
			if i>>k&1 == 1 {
				pk.add(b, slot(area, j), at[i])
				at[i] = slot(recv, j) // where the exchange below leaves it
				j++
			}
		}
		pk.flush(b)
		to, from := DisseminationPartners(r, p, k)
		exchange(b, c, to, whole(Scratch, area, m*n), from, whole(Scratch, recv, m*n), Region{}, false)
	}
	for i := 1; i < p; i++ {
		b.Copy(whole(Output, mod(r-i, p), n), at[i])
	}
}

// carried is the number of block indices in [1, p) with bit k set: the
// blocks each rank sends in round k of allToAllBruck.
func carried(p, k int) int {
	period, half := 2<<k, 1<<k
	return p/period*half + max(0, p%period-half)
}

// packer gathers copies into a send area, issuing adjacent ones as a single
// Copy.
type packer struct{ dst, src Region }

func (pk *packer) add(b *Builder, dst, src Region) {
	if pk.dst.Len > 0 && follows(pk.dst, dst) && follows(pk.src, src) {
		pk.dst.Len += dst.Len
		pk.src.Len += src.Len
		return
	}
	pk.flush(b)
	pk.dst, pk.src = dst, src
}

func (pk *packer) flush(b *Builder) {
	if pk.dst.Len > 0 {
		b.Copy(pk.dst, pk.src)
	}
	*pk = packer{}
}

// follows reports whether next starts where prev ends, in the same block.
func follows(prev, next Region) bool {
	return prev.Buf == next.Buf && prev.Block == next.Block && prev.End() == next.Off
}

// uniformCounts rejects AllToAll counts that are not all equal, which
// allToAllBruck needs.
func uniformCounts(s *Spec) error {
	n := s.SendCounts[0]
	for q := range s.Size {
		if s.SendCounts[q] != n {
			return fmt.Errorf("needs uniform counts, but rank %d sends %d elements to rank 0 and %d to rank %d", s.Rank, n, s.SendCounts[q], q)
		}
		if s.RecvCounts[q] != n {
			return fmt.Errorf("needs uniform counts, but rank %d sends %d elements to rank 0 and receives %d from rank %d", s.Rank, n, s.RecvCounts[q], q)
		}
	}
	return nil
}
