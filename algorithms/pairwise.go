package algorithms

// allToAllPairwise: in step s = 1..p-1 rank r sends block r+s to rank r+s and
// receives block r-s from rank r-s; its own block is copied locally. No step
// depends on another, so the executor may overlap them all; program order
// (and so ready order) is the pairwise order, which spreads the first
// messages over distinct links.
//
// Empty blocks send nothing, not even an empty frame, so the receiver
// learns about a count mismatch only from what does arrive: a sender with
// elements facing a receiver that expects none makes the receiver's Arrive
// fail with an unexpected (peer, tag); differing non-zero counts fail the
// executor's length check (or Arrive, when the chunk counts differ); but a
// sender with nothing facing a receiver that expects something just leaves
// the receiver waiting, to be reported by its timeout (Progress.Waiting
// names the sender).
func allToAllPairwise(b *Builder, s *Spec) {
	p, r, c := s.Size, s.Rank, s.ChunkElems()
	b.Grow(totalChunks(s.SendCounts, c) + totalChunks(s.RecvCounts, c))
	if n := s.SendCounts[r]; n > 0 {
		b.Copy(whole(Output, r, n), whole(Input, r, n))
	}
	for k := 1; k < p; k++ {
		to, from := (r+k)%p, mod(r-k, p)
		exchange(b, c, to, whole(Input, to, s.SendCounts[to]), from, whole(Output, from, s.RecvCounts[from]), Region{}, false)
	}
}
