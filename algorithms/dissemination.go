package algorithms

// barrierDissemination: in round k rank r notifies r+2^k and hears from
// r-2^k (see DisseminationPartners). Notifications are zero-byte messages on
// the token region (Builder.Token): a Send and a Recv whose Region is offset
// 0, length 0 of a zero-length Scratch block. Because token regions overlap
// for dependency purposes, the Send of round k+1 waits for the Recv of round
// k, which is what makes knowledge of the other ranks' arrival transitive.
func barrierDissemination(b *Builder, s *Spec) {
	p, r := s.Size, s.Rank
	if p == 1 {
		return
	}
	tok := b.Token()
	for k := range DisseminationRounds(p) {
		to, from := DisseminationPartners(r, p, k)
		b.Send(to, tok)
		b.Recv(from, tok)
	}
}
