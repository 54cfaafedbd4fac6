package algorithms

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms/internal/names"
)

// Kind names a collective operation.
type Kind uint8

// The collectives a Schedule can implement.
const (
	AllReduce Kind = iota + 1
	Reduce
	Broadcast
	AllGather
	ReduceScatter
	AllToAll
	Gather
	Scatter
	Barrier
)

var kindNames = [...]string{
	AllReduce:     "all_reduce",
	Reduce:        "reduce",
	Broadcast:     "broadcast",
	AllGather:     "all_gather",
	ReduceScatter: "reduce_scatter",
	AllToAll:      "all_to_all",
	Gather:        "gather",
	Scatter:       "scatter",
	Barrier:       "barrier",
}

func (k Kind) valid() bool { return k >= AllReduce && k <= Barrier }

// Kinds lists every collective, in Kind order.
func Kinds() []Kind {
	ks := make([]Kind, 0, Barrier)
	for k := AllReduce; k <= Barrier; k++ {
		ks = append(ks, k)
	}
	return ks
}

// ParseKind returns the Kind whose String is name.
func ParseKind(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if kindNames[k] == name {
			return k, true
		}
	}
	return 0, false
}

func (k Kind) String() string { return names.Of(k, "kind", kindNames[:]) }

// Buffer names one of the three memories a step can touch.
type Buffer uint8

// Input is the caller's send buffer and is never written (InPlace aliasing is
// expressed by generating against Output instead). Output is the caller's
// receive buffer. Scratch is memory the executor allocates per run, sized by
// Schedule.Scratch.
const (
	Input Buffer = iota
	Output
	Scratch
)

func (b Buffer) String() string {
	return names.Of(b, "buffer", []string{Input: "in", Output: "out", Scratch: "scratch"})
}

// Region is a range of elements inside one block of one buffer. Buffers are
// lists of blocks (see Spec.Blocks); offsets and lengths count elements, never
// bytes.
//
// Len is positive everywhere except in token regions (see Builder.Token),
// which name a zero-length Scratch block and carry zero-byte messages.
type Region struct {
	Buf Buffer
	// Block is an int32 so that a region is three words: a rank holds
	// one in and one out per step, and a simulation millions of ranks.
	Block    int32
	Off, Len int
}

// End is the element just past r.
func (r Region) End() int { return r.Off + r.Len }

// Overlaps reports whether r and o share an element. Token regions of the same
// block overlap each other, so ordering between zero-byte messages is kept.
func (r Region) Overlaps(o Region) bool {
	if r.Buf != o.Buf || r.Block != o.Block {
		return false
	}
	return r.Off < o.Off+max(o.Len, 1) && o.Off < r.Off+max(r.Len, 1)
}

func (r Region) String() string {
	return fmt.Sprintf("%v[%d][%d:%d]", r.Buf, r.Block, r.Off, r.End())
}

// Prim is the primitive operation of a Step.
type Prim uint8

// Send reads Src and sends it to Peer. Recv writes the message from Peer into
// Dst. RecvReduce writes Src ⊕ message into Dst. Copy writes Src into Dst.
// Accumulate writes Dst ⊕ Src into Dst: a rank's own contribution can take
// its place in an order of reduction every rank shares.
const (
	Send Prim = iota + 1
	Recv
	RecvReduce
	Copy
	Accumulate
)

func (p Prim) String() string {
	return names.Of(p, "prim", []string{Send: "send", Recv: "recv", RecvReduce: "recv_reduce",
		Copy: "copy", Accumulate: "accumulate"})
}

// Receives reports whether the primitive waits for a message.
func (p Prim) Receives() bool { return p == Recv || p == RecvReduce }

// Step is one primitive of a rank's schedule.
type Step struct {
	Prim Prim
	// Peer is the other rank of a Send, Recv or RecvReduce; -1 for Copy and
	// Accumulate.
	Peer int
	// Tag is the ordinal of this message among all messages from this rank
	// to Peer (Send) or from Peer to this rank (Recv*), in program order,
	// starting at 0. The k-th Send from A to B matches the k-th Recv* on B
	// from A.
	Tag int
	// Dst is the region written by Recv, RecvReduce, Copy and Accumulate
	// (which reads it too).
	Dst Region
	// Src is the region read by Send, Copy and Accumulate, and the local
	// operand of RecvReduce (Dst = Src ⊕ incoming; Src may equal Dst).
	Src Region
	// Deps are indices of earlier steps that must complete before this one
	// executes. They are sorted ascending.
	Deps []int32
}

// Reads returns the region the step reads and whether it reads at all.
// Accumulate reads its Dst as well, which its write orders anyway.
func (s *Step) Reads() (Region, bool) {
	switch s.Prim {
	case Send, Copy, RecvReduce, Accumulate:
		return s.Src, true
	}
	return Region{}, false
}

// Writes returns the region the step writes and whether it writes at all.
func (s *Step) Writes() (Region, bool) {
	switch s.Prim {
	case Recv, RecvReduce, Copy, Accumulate:
		return s.Dst, true
	}
	return Region{}, false
}

// Len is the number of elements the step moves: the message length for Send
// and Recv*, the local length for Copy and Accumulate.
func (s *Step) Len() int {
	if s.Prim == Send {
		return s.Src.Len
	}
	return s.Dst.Len
}

func (s Step) String() string {
	switch s.Prim {
	case Send:
		return fmt.Sprintf("send %v -> %d#%d deps%v", s.Src, s.Peer, s.Tag, s.Deps)
	case Recv:
		return fmt.Sprintf("recv %v <- %d#%d deps%v", s.Dst, s.Peer, s.Tag, s.Deps)
	case RecvReduce:
		return fmt.Sprintf("recv_reduce %v = %v + %d#%d deps%v", s.Dst, s.Src, s.Peer, s.Tag, s.Deps)
	case Copy:
		return fmt.Sprintf("copy %v = %v deps%v", s.Dst, s.Src, s.Deps)
	case Accumulate:
		return fmt.Sprintf("accumulate %v += %v deps%v", s.Dst, s.Src, s.Deps)
	}
	return fmt.Sprintf("%v deps%v", s.Prim, s.Deps)
}

// Schedule is one rank's part of a collective: a DAG of steps. It is
// immutable once built and may be shared by any number of Progress values.
type Schedule struct {
	// Algorithm names the generator, e.g. "ring" or "binomial".
	Algorithm string
	// Rank and Size identify the rank this schedule is for.
	Rank, Size int
	// Steps in program order; every Dep points backwards.
	Steps []Step
	// Scratch is the element count of each Scratch block the executor must
	// allocate. A zero entry is a token block (see Builder.Token).
	Scratch []int

	ix *index
}

// Fits reports the first step whose regions lie outside their blocks
// (input and output giving the element counts of the Input and Output
// blocks, s.Scratch those of Scratch), or that writes Input: what an
// executor must know before it lets s touch its buffers.
func (s *Schedule) Fits(input, output []int) error {
	blocks := [3][]int{input, output, s.Scratch}
	inBounds := func(r Region) error {
		if r.Buf > Scratch || r.Block < 0 || int(r.Block) >= len(blocks[r.Buf]) {
			return fmt.Errorf("%v block %d does not exist", r.Buf, r.Block)
		}
		if size := blocks[r.Buf][r.Block]; r.Off < 0 || r.Len < 0 || r.End() > size {
			return fmt.Errorf("region %v lies outside its block of %d elements", r, size)
		}
		return nil
	}
	for i, st := range s.Steps {
		err := error(nil)
		if src, ok := st.Reads(); ok {
			err = inBounds(src)
		}
		if dst, ok := st.Writes(); ok && err == nil {
			if err = inBounds(dst); err == nil && dst.Buf == Input {
				err = errors.New("it writes an input")
			}
		}
		if err != nil {
			return fmt.Errorf("step %d (%v): %w", i, st, err)
		}
	}
	return nil
}

// index is what Progress needs and is computed once per Schedule:
// dependents in CSR form, and the receiving step of each (peer, tag).
type index struct {
	outOff []int32 // dependents of step i are out[outOff[i]:outOff[i+1]]
	out    []int32
	// recv finds the receiving step of (peer, tag) by binary search: a
	// rank of a large communicator pays for the steps it receives with, not
	// for every rank, and a simulation of 100,000 ranks keeps one small
	// array for each where a map would cost several cache lines.
	recv []recvEntry // by peer, then tag
}

type recvEntry struct{ peer, tag, step int32 }

func (e recvEntry) compare(peer, tag int32) int {
	if e.peer != peer {
		return cmp.Compare(e.peer, peer)
	}
	return cmp.Compare(e.tag, tag)
}

func newIndex(s *Schedule) *index {
	n := len(s.Steps)
	ix := &index{outOff: make([]int32, n+1)}
	for i := range s.Steps {
		st := &s.Steps[i]
		for _, d := range st.Deps {
			if d < 0 || int(d) >= i {
				panic(fmt.Sprintf("algorithms: step %d depends on step %d, not an earlier one", i, d))
			}
			ix.outOff[d+1]++
		}
		if st.Prim.Receives() {
			if st.Peer < 0 || st.Tag < 0 {
				panic(fmt.Sprintf("algorithms: step %d receives from peer %d tag %d", i, st.Peer, st.Tag))
			}
		}
	}
	for i := 0; i < n; i++ {
		ix.outOff[i+1] += ix.outOff[i]
	}
	ix.out = make([]int32, ix.outOff[n])
	fill := make([]int32, n)
	copy(fill, ix.outOff[:n])
	for i := range s.Steps {
		for _, d := range s.Steps[i].Deps {
			ix.out[fill[d]] = int32(i)
			fill[d]++
		}
	}

	for i := range s.Steps {
		if st := &s.Steps[i]; st.Prim.Receives() {
			ix.recv = append(ix.recv, recvEntry{int32(st.Peer), int32(st.Tag), int32(i)})
		}
	}
	slices.SortFunc(ix.recv, func(a, b recvEntry) int { return a.compare(b.peer, b.tag) })
	for i := 1; i < len(ix.recv); i++ {
		if a, b := ix.recv[i-1], ix.recv[i]; a.compare(b.peer, b.tag) == 0 {
			panic(fmt.Sprintf("algorithms: steps %d and %d both receive from peer %d tag %d", a.step, b.step, a.peer, a.tag))
		}
	}
	return ix
}

// recvStep returns the step receiving (peer, tag), or -1.
func (ix *index) recvStep(peer, tag int) int {
	i, found := slices.BinarySearchFunc(ix.recv, recvEntry{peer: int32(peer), tag: int32(tag)},
		func(e, target recvEntry) int { return e.compare(target.peer, target.tag) })
	if !found {
		return -1
	}
	return int(ix.recv[i].step)
}
