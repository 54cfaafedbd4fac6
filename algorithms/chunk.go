package algorithms

// Chunking: a region of n elements travels as ceil(n/c) messages of at most c
// elements. Both ends derive the pieces from the same counts, so they agree
// on every message length without negotiating, and an empty region yields no
// message at all.

func nchunks(n, c int) int { return (n + c - 1) / c }

// totalChunks is the number of messages that carry blocks of counts.
func totalChunks(counts []int, c int) int {
	t := 0
	for _, n := range counts {
		t += nchunks(n, c)
	}
	return t
}

// piece is the j-th chunk of r.
func piece(r Region, j, c int) Region {
	o := j * c
	return Region{Buf: r.Buf, Block: r.Block, Off: r.Off + o, Len: min(c, r.Len-o)}
}

// whole is block of buf, n elements long: a block numbered as a rank is
// an int, one Builder.Scratch made an int32.
func whole[B int | int32](buf Buffer, block B, n int) Region {
	return Region{Buf: buf, Block: int32(block), Len: n}
}

// sendAll sends r to peer chunk by chunk.
func sendAll(b *Builder, c, peer int, r Region) {
	for j := range nchunks(r.Len, c) {
		b.Send(peer, piece(r, j, c))
	}
}

// recvAll receives r from peer chunk by chunk.
func recvAll(b *Builder, c, peer int, r Region) {
	for j := range nchunks(r.Len, c) {
		b.Recv(peer, piece(r, j, c))
	}
}

// exchange sends out to `to` while receiving in from `from`, interleaving
// chunk by chunk so that the ready order follows the pipeline. With reduce,
// chunk j of in is written as local ⊕ incoming (local has in's length);
// otherwise it is plainly received. An empty side is skipped.
func exchange(b *Builder, c, to int, out Region, from int, in Region, local Region, reduce bool) {
	ns, nr := nchunks(out.Len, c), nchunks(in.Len, c)
	for j := range max(ns, nr) {
		if j < ns {
			b.Send(to, piece(out, j, c))
		}
		if j < nr {
			if reduce {
				b.RecvReduce(from, piece(in, j, c), piece(local, j, c))
			} else {
				b.Recv(from, piece(in, j, c))
			}
		}
	}
}

// extent is a run of an all-reduce tensor's elements. Input and Output share
// one layout (a single block), so an extent names the same elements in either.
type extent struct{ off, n int }

func (e extent) on(buf Buffer) Region { return Region{Buf: buf, Off: e.off, Len: e.n} }

// part is the run [lo, lo+k) of parts near-equal segments of e. Segment i
// starts at i·q + min(i, rem) for q, rem = e.n / parts, e.n % parts: the
// first rem segments have one element more, and every rank derives the same
// boundaries from the count alone.
func (e extent) part(parts, lo, k int) extent {
	q, rem := e.n/parts, e.n%parts
	off := lo*q + min(lo, rem)
	return extent{off: e.off + off, n: (lo+k)*q + min(lo+k, rem) - off}
}
