package algorithms

import (
	"fmt"
	"math"
	"slices"
)

// Builder turns one rank's sequential program into a Schedule. Generators call
// Send, Recv, RecvReduce and Copy in the order a single-threaded rank would
// perform them; the Builder assigns tags and derives the dependency DAG from
// region overlap, so that everything the program order does not force (other
// links, other chunks) may run concurrently.
//
// A Builder panics when given a region or peer that breaks an invariant: that
// is a bug in the generator, not a property of the input.
type Builder struct {
	rank, size int
	steps      []Step
	// Next tag per peer: maps, so that a schedule costs what its peers do,
	// not what the communicator's size does.
	sendTag  map[int]int
	recvTag  map[int]int
	scratch  []int
	layout   [2][]int // declared Input and Output blocks
	declared [2]bool
	token    int32
	tracks   [3][]*track // Input is never written, so never tracked
	readers  []readerNode
	tmp      []int32
	arena    []int32
	built    bool
}

// NewBuilder returns a Builder for rank of size ranks.
func NewBuilder(rank, size int) *Builder {
	if size < 1 || rank < 0 || rank >= size {
		panic(fmt.Sprintf("algorithms: NewBuilder(%d, %d): rank out of range", rank, size))
	}
	b := &Builder{}
	b.reset(rank, size)
	return b
}

// reset readies b to build rank's schedule among size ranks, keeping its
// arrays. The Schedule b built last owns nothing of them.
func (b *Builder) reset(rank, size int) {
	clear(b.steps)
	if b.sendTag == nil {
		b.sendTag, b.recvTag = map[int]int{}, map[int]int{}
	}
	clear(b.sendTag)
	clear(b.recvTag)
	for i := range b.tracks {
		clear(b.tracks[i])
		b.tracks[i] = b.tracks[i][:0]
	}
	*b = Builder{
		rank: rank, size: size, token: -1,
		steps: b.steps[:0], sendTag: b.sendTag, recvTag: b.recvTag, tracks: b.tracks,
		readers: b.readers[:0], tmp: b.tmp[:0], arena: b.arena[:0],
	}
}

// Layout declares the block sizes of Input or Output so that every region on
// that buffer is bounds-checked. A nil or empty blocks declares that the rank
// has no such buffer. Undeclared buffers are checked only for sign.
func (b *Builder) Layout(buf Buffer, blocks []int) {
	if buf != Input && buf != Output {
		panic(fmt.Sprintf("algorithms: Layout(%v): only Input and Output have a declared layout", buf))
	}
	b.layout[buf] = slices.Clone(blocks)
	b.declared[buf] = true
}

// Scratch allocates a scratch block of n elements and returns its index.
func (b *Builder) Scratch(n int) int32 {
	if n < 0 {
		panic(fmt.Sprintf("algorithms: Scratch(%d): negative size", n))
	}
	b.scratch = append(b.scratch, n)
	return int32(len(b.scratch) - 1)
}

// Token returns the zero-length region that zero-byte messages (barrier
// notifications) are sent from and received into. It lives on a zero-length
// Scratch block allocated on first use. For dependency purposes every token
// region overlaps every other, so token messages stay in program order.
func (b *Builder) Token() Region {
	if b.token < 0 {
		b.token = b.Scratch(0)
	}
	return Region{Buf: Scratch, Block: b.token}
}

// Send appends a step sending src to peer and returns its index.
func (b *Builder) Send(peer int, src Region) int {
	b.checkPeer(peer)
	b.checkRegion(src, true)
	st := Step{Prim: Send, Peer: peer, Tag: b.sendTag[peer], Src: src}
	b.sendTag[peer]++
	return b.add(st)
}

// Recv appends a step receiving the message from peer into dst.
func (b *Builder) Recv(peer int, dst Region) int {
	b.checkPeer(peer)
	b.checkWritable(dst)
	b.checkRegion(dst, true)
	st := Step{Prim: Recv, Peer: peer, Tag: b.recvTag[peer], Dst: dst}
	b.recvTag[peer]++
	return b.add(st)
}

// RecvReduce appends a step writing local ⊕ (the message from peer) into dst.
// local and dst must have the same length and either coincide or be disjoint.
func (b *Builder) RecvReduce(peer int, dst, local Region) int {
	b.checkPeer(peer)
	b.checkWritable(dst)
	b.checkRegion(dst, false)
	b.checkRegion(local, false)
	if dst.Len != local.Len {
		panic(fmt.Sprintf("algorithms: RecvReduce dst %v and local %v differ in length", dst, local))
	}
	if dst != local && dst.Overlaps(local) {
		panic(fmt.Sprintf("algorithms: RecvReduce dst %v partially overlaps local %v", dst, local))
	}
	st := Step{Prim: RecvReduce, Peer: peer, Tag: b.recvTag[peer], Dst: dst, Src: local}
	b.recvTag[peer]++
	return b.add(st)
}

// Copy appends a step copying src into dst; they must not overlap.
func (b *Builder) Copy(dst, src Region) int { return b.local(Copy, dst, src) }

// Accumulate appends a step writing dst ⊕ src into dst; they must have the
// same length and not overlap.
func (b *Builder) Accumulate(dst, src Region) int { return b.local(Accumulate, dst, src) }

// local appends a step of a primitive that moves no message.
func (b *Builder) local(prim Prim, dst, src Region) int {
	b.checkWritable(dst)
	b.checkRegion(dst, false)
	b.checkRegion(src, false)
	if dst.Len != src.Len {
		panic(fmt.Sprintf("algorithms: %s dst %v and src %v differ in length", prim, dst, src))
	}
	if dst.Overlaps(src) {
		panic(fmt.Sprintf("algorithms: %s dst %v overlaps src %v", prim, dst, src))
	}
	return b.add(Step{Prim: prim, Peer: -1, Dst: dst, Src: src})
}

// Grow reserves room for n more steps. Generators that can bound their
// length call it first, so that Steps is allocated once.
func (b *Builder) Grow(n int) {
	b.steps = slices.Grow(b.steps, n)
}

// Build returns the schedule. The Builder must not be used afterwards.
func (b *Builder) Build(algorithm string) *Schedule {
	b.mustLive()
	b.built = true
	s := &Schedule{
		Algorithm: algorithm,
		Rank:      b.rank,
		Size:      b.size,
		Steps:     b.compact(),
		Scratch:   b.scratch,
	}
	if s.Scratch == nil {
		s.Scratch = []int{}
	}
	s.ix = newIndex(s)
	return s
}

// compact returns the steps in a slice of their own length, their
// dependencies in one of theirs, apart from the Builder's arrays, which
// it may reuse: a schedule lives as long as its collective, and a
// simulation keeps a million at once, where Grow's bounds and the arena's
// chunks leave room to spare.
func (b *Builder) compact() []Step {
	if len(b.steps) == 0 {
		return nil
	}
	deps := 0
	for i := range b.steps {
		deps += len(b.steps[i].Deps)
	}
	steps := make([]Step, len(b.steps))
	copy(steps, b.steps)
	slab := make([]int32, 0, deps)
	for i := range steps {
		if d := steps[i].Deps; d != nil {
			start := len(slab)
			slab = append(slab, d...)
			steps[i].Deps = slab[start:len(slab):len(slab)]
		}
	}
	return steps
}

func (b *Builder) mustLive() {
	if b.built {
		panic("algorithms: Builder used after Build")
	}
}

func (b *Builder) checkPeer(peer int) {
	if peer < 0 || peer >= b.size || peer == b.rank {
		panic(fmt.Sprintf("algorithms: rank %d of %d: bad peer %d", b.rank, b.size, peer))
	}
}

func (b *Builder) checkWritable(r Region) {
	if r.Buf == Input {
		panic(fmt.Sprintf("algorithms: rank %d writes the Input buffer (%v)", b.rank, r))
	}
}

// checkRegion panics unless r lies inside its block. Zero-length regions are
// legal only as tokens (offset 0 of a zero-length Scratch block) and only in
// messages.
func (b *Builder) checkRegion(r Region, message bool) {
	b.mustLive()
	if r.Block < 0 || r.Off < 0 || r.Len < 0 || r.Off > math.MaxInt-r.Len {
		panic(fmt.Sprintf("algorithms: rank %d: malformed region %v", b.rank, r))
	}
	limit := -1 // unknown
	switch r.Buf {
	case Input, Output:
		if b.declared[r.Buf] {
			if int(r.Block) >= len(b.layout[r.Buf]) {
				panic(fmt.Sprintf("algorithms: rank %d: region %v names a missing block (%v has %d)", b.rank, r, r.Buf, len(b.layout[r.Buf])))
			}
			limit = b.layout[r.Buf][r.Block]
		}
	case Scratch:
		if int(r.Block) >= len(b.scratch) {
			panic(fmt.Sprintf("algorithms: rank %d: region %v names an unallocated scratch block", b.rank, r))
		}
		limit = b.scratch[r.Block]
		if limit == 0 {
			if r.Off != 0 || r.Len != 0 || !message {
				panic(fmt.Sprintf("algorithms: rank %d: token region %v used as data", b.rank, r))
			}
			return
		}
	default:
		panic(fmt.Sprintf("algorithms: rank %d: region %v on unknown buffer", b.rank, r))
	}
	if r.Len == 0 {
		panic(fmt.Sprintf("algorithms: rank %d: empty region %v (generators skip empty pieces)", b.rank, r))
	}
	if limit >= 0 && r.End() > limit {
		panic(fmt.Sprintf("algorithms: rank %d: region %v beyond its block of %d elements", b.rank, r, limit))
	}
}

// add derives the dependencies of st from the accesses before it and appends
// it. Rules, per (Buf, Block) and overlapping range:
//
//	read  after write: depend on the last writer            (RAW)
//	write after read:  depend on every reader since it       (WAR)
//	write after write: depend on the last writer, unless a   (WAW)
//	                   reader since it already does
func (b *Builder) add(st Step) int {
	idx := int32(len(b.steps))
	b.tmp = b.tmp[:0]
	rd, reads := st.Reads()
	wr, writes := st.Writes()
	var rt, wt *track
	if reads {
		if rt = b.track(rd); rt != nil {
			rt.split(lo(rd))
			rt.split(hi(rd))
			b.readDeps(rt, lo(rd), hi(rd))
		}
	}
	if writes {
		wt = b.track(wr)
		wt.split(lo(wr))
		wt.split(hi(wr))
		b.writeDeps(wt, lo(wr), hi(wr))
	}
	if rt != nil {
		b.addReader(rt, lo(rd), hi(rd), idx)
	}
	if writes {
		wt.setWriter(lo(wr), hi(wr), idx)
	}
	st.Deps = b.finishDeps()
	if len(b.steps) == cap(b.steps) {
		// Double rather than append's 1.25x for large slices: Steps are
		// big, and schedules run to thousands of them.
		b.steps = slices.Grow(b.steps, max(len(b.steps), 64))
	}
	b.steps = append(b.steps, st)
	return int(idx)
}

// lo and hi give the tracked range of a region; a token counts as one element.
func lo(r Region) int { return r.Off }
func hi(r Region) int { return r.Off + max(r.Len, 1) }

// track returns the access history of r's block; nil for Input, which is
// never written and so never constrains anything.
func (b *Builder) track(r Region) *track {
	if r.Buf == Input {
		return nil
	}
	ts := b.tracks[r.Buf]
	for len(ts) <= int(r.Block) {
		ts = append(ts, nil)
	}
	b.tracks[r.Buf] = ts
	if ts[r.Block] == nil {
		ts[r.Block] = newTrack()
	}
	return ts[r.Block]
}

// finishDeps sorts and dedups b.tmp, drops deps already implied by a direct
// dep of another listed dep, and copies the result into the arena.
func (b *Builder) finishDeps() []int32 {
	if len(b.tmp) == 0 {
		return nil
	}
	slices.Sort(b.tmp)
	d := slices.Compact(b.tmp)
	if len(d) > 1 && len(d) <= 64 {
		keep := d[:0]
		for i, x := range d {
			implied := false
			for _, y := range d[i+1:] {
				if _, ok := slices.BinarySearch(b.steps[y].Deps, x); ok {
					implied = true
					break
				}
			}
			if !implied {
				keep = append(keep, x)
			}
		}
		d = keep
	}
	if cap(b.arena)-len(b.arena) < len(d) {
		// Each new chunk doubles the last, up to 1024: a small schedule
		// keeps a small arena (a simulation builds 100,000 of them), a
		// large one few chunks.
		b.arena = make([]int32, 0, max(min(2*cap(b.arena), 1024), 64, len(d)))
	}
	start := len(b.arena)
	b.arena = append(b.arena, d...)
	return b.arena[start:len(b.arena):len(b.arena)]
}

// track is the access history of one block: disjoint segments covering
// [0, MaxInt), each with its last writer and the readers since that write.
// Writes collapse the segments they cover, so there are about as many
// segments as live chunks. They are kept sorted in buckets of at most
// 2*bucketMax, so that splitting one shifts a bucket, not the whole block:
// Build stays linear for schedules of tens of thousands of steps.
type track struct {
	bk   [][]seg // consecutive, each non-empty
	last int     // bucket of the last lookup: accesses are local
}

const bucketMax = 64

// seg holds no pointers, so that shifting segments is a plain memmove.
type seg struct {
	lo, hi  int
	writer  int32 // -1: never written
	readers int32 // head of the readers list in Builder.readers, -1: none
}

// readerNode is a cell of an immutable, prepend-only list: the two halves of
// a split segment share their readers' tail safely.
type readerNode struct {
	step, next int32
}

func newTrack() *track {
	return &track{bk: [][]seg{{{lo: 0, hi: math.MaxInt, writer: -1, readers: -1}}}}
}

// pos locates a segment: bucket b, index i.
type pos struct{ b, i int }

// find returns the segment containing x, or the end position for MaxInt.
func (t *track) find(x int) pos {
	b := t.last
	if b >= len(t.bk) || t.bk[b][0].lo > x || b+1 < len(t.bk) && t.bk[b+1][0].lo <= x {
		i, j := 0, len(t.bk)
		for i < j {
			h := int(uint(i+j) >> 1)
			if t.bk[h][0].lo <= x {
				i = h + 1
			} else {
				j = h
			}
		}
		b = i - 1
		t.last = b
	}
	segs := t.bk[b]
	i, j := 0, len(segs)
	for i < j {
		h := int(uint(i+j) >> 1)
		if segs[h].hi <= x {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == len(segs) {
		return pos{len(t.bk), 0} // x == MaxInt
	}
	return pos{b, i}
}

func (t *track) at(p pos) *seg { return &t.bk[p.b][p.i] }

func (t *track) next(p pos) pos {
	if p.i++; p.i == len(t.bk[p.b]) {
		return pos{p.b + 1, 0}
	}
	return p
}

// split makes x a segment boundary.
func (t *track) split(x int) {
	p := t.find(x)
	if p.b == len(t.bk) || t.at(p).lo == x {
		return
	}
	s := t.at(p)
	right := *s
	right.lo, s.hi = x, x
	t.bk[p.b] = slices.Insert(t.bk[p.b], p.i+1, right)
	if old := t.bk[p.b]; len(old) > 2*bucketMax {
		half := len(old) / 2
		t.bk[p.b] = old[:half:half] // clipped: growing it reallocates
		t.bk = slices.Insert(t.bk, p.b+1, slices.Clone(old[half:]))
	}
}

// The walks from here on assume lo and hi are segment boundaries already (split):
// the range is the segment starting at lo and those following it until one
// starts at hi.

func (t *track) in(p pos, hi int) bool { return p.b < len(t.bk) && t.at(p).lo < hi }

func (b *Builder) readDeps(t *track, lo, hi int) {
	for p := t.find(lo); t.in(p, hi); p = t.next(p) {
		if s := t.at(p); s.writer >= 0 {
			b.tmp = append(b.tmp, s.writer)
		}
	}
}

func (b *Builder) writeDeps(t *track, lo, hi int) {
	for p := t.find(lo); t.in(p, hi); p = t.next(p) {
		s := t.at(p)
		if s.readers >= 0 {
			// Each reader already waits for s.writer.
			for n := s.readers; n >= 0; n = b.readers[n].next {
				b.tmp = append(b.tmp, b.readers[n].step)
			}
		} else if s.writer >= 0 {
			b.tmp = append(b.tmp, s.writer)
		}
	}
}

func (b *Builder) addReader(t *track, lo, hi int, step int32) {
	for p := t.find(lo); t.in(p, hi); p = t.next(p) {
		s := t.at(p)
		b.readers = append(b.readers, readerNode{step: step, next: s.readers})
		s.readers = int32(len(b.readers) - 1)
	}
}

// setWriter collapses the segments of [lo, hi) into one written by step.
func (t *track) setWriter(lo, hi int, step int32) {
	p := t.find(lo)
	*t.at(p) = seg{lo: lo, hi: hi, writer: step, readers: -1}
	b, i := p.b, p.i+1
	for b < len(t.bk) {
		segs := t.bk[b]
		k := i
		for k < len(segs) && segs[k].lo < hi {
			k++
		}
		t.bk[b] = slices.Delete(segs, i, k)
		if k < len(segs) {
			return // reached the segment starting at hi
		}
		if len(t.bk[b]) == 0 {
			t.bk = slices.Delete(t.bk, b, b+1)
		} else {
			b++
		}
		i = 0
	}
}
