package algorithms

// Linear gather, scatter and barrier: every rank talks to the root
// directly. Each block crosses the network once (the tree relays most
// blocks several times), at the price of p-1 messages funnelling through
// the root's links.

func gatherLinear(b *Builder, s *Spec) {
	r, root, cs, c := s.Rank, s.Root, s.Counts, s.ChunkElems()
	if r != root {
		sendAll(b, c, root, whole(Input, 0, cs[r]))
		return
	}
	if cs[r] > 0 {
		b.Copy(whole(Output, r, cs[r]), whole(Input, 0, cs[r]))
	}
	for k := 1; k < s.Size; k++ {
		q := (root + k) % s.Size
		recvAll(b, c, q, whole(Output, q, cs[q]))
	}
}

func scatterLinear(b *Builder, s *Spec) {
	r, root, cs, c := s.Rank, s.Root, s.Counts, s.ChunkElems()
	if r != root {
		recvAll(b, c, root, whole(Output, 0, cs[r]))
		return
	}
	if cs[r] > 0 {
		b.Copy(whole(Output, 0, cs[r]), whole(Input, r, cs[r]))
	}
	for k := 1; k < s.Size; k++ {
		q := (root + k) % s.Size
		sendAll(b, c, q, whole(Input, q, cs[q]))
	}
}

// barrierLinear gathers a token at rank 0 from every other rank, then
// sends one back to each: 2(p-1) messages against dissemination's p log p,
// but rank 0 waits on every other rank at once, so a barrier that times
// out there knows exactly which ranks never arrived (a monitored barrier,
// as Gloo's).
func barrierLinear(b *Builder, s *Spec) {
	p, r := s.Size, s.Rank
	if p == 1 {
		return
	}
	tok := b.Token()
	if r != 0 {
		b.Send(0, tok)
		b.Recv(0, tok)
		return
	}
	for q := 1; q < p; q++ {
		b.Recv(q, tok)
	}
	for q := 1; q < p; q++ {
		b.Send(q, tok)
	}
}
