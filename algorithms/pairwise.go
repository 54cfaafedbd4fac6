package algorithms

// allToAllPairwise: in step s = 1..p-1 rank r sends block r+s to rank r+s and
// receives block r-s from rank r-s; its own block is copied locally. No step
// depends on another, so the executor may overlap them all; program order
// (and so ready order) is the pairwise order, which spreads the first
// messages over distinct links.
//
// Empty blocks send nothing. The executor checks message lengths, so a
// SendCounts/RecvCounts mismatch between two ranks is detected only when the
// receiving side expects at least one element: a sender with count 0 facing
// a receiver expecting some leaves the receiver waiting (see
// Progress.Waiting), while a sender with elements facing a receiver expecting
// none produces an unexpected (peer, tag) at Arrive.
func allToAllPairwise(b *Builder, s *Spec) {
	p, r, c := s.Size, s.Rank, s.ChunkElems()
	if n := s.SendCounts[r]; n > 0 {
		b.Copy(whole(Output, r, n), whole(Input, r, n))
	}
	for k := 1; k < p; k++ {
		to, from := (r+k)%p, mod(r-k, p)
		exchange(b, c, to, whole(Input, to, s.SendCounts[to]), from, whole(Output, from, s.RecvCounts[from]), Region{}, false)
	}
}
