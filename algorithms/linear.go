package algorithms

// Linear gather and scatter: every rank talks to the root directly. Each
// block crosses the network once (the tree relays most blocks several
// times), at the price of p-1 messages funnelling through the root's links.

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
