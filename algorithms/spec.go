package algorithms

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// DefaultChunkBytes is the largest message a schedule sends when
// Spec.ChunkBytes is zero.
const DefaultChunkBytes = 512 << 10

// ErrBadSpec is wrapped by every error Spec.Validate returns, and by
// Build's for a spec that is not valid.
var ErrBadSpec = errors.New("algorithms: invalid spec")

// ErrBadSchedule is wrapped by Build's error for a generator that broke
// the Builder's rules: a region out of bounds, a write to Input, a bad
// peer.
var ErrBadSchedule = errors.New("algorithms: invalid schedule")

// Spec describes one rank's part of a collective. Every rank of the
// collective must pass the same Kind, Size, Root, Counts, ElemSize,
// ChunkBytes, InPlace, LocalSize and Algorithm, a Registry holding the same
// schedules, and its own Rank (AllToAll: its own SendCounts and RecvCounts
// row and column).
//
// Buffers are lists of blocks (see Blocks):
//
//	Kind           Counts      Input blocks           Output blocks          InPlace
//	AllReduce      [n]         [n]                    [n]                    Input is Output
//	Reduce         [n]         [n]                    root: [n]; others none on root, Input is Output
//	Broadcast      [n]         none                   [n]
//	AllGather      [c0..cp-1]  [c_rank]               [c0..cp-1]             Input is Output block Rank
//	ReduceScatter  [c0..cp-1]  [c0..cp-1]             [c_rank]
//	AllToAll       -           SendCounts             RecvCounts
//	Gather         [c0..cp-1]  [c_rank]               root: [c0..cp-1]; others none
//	Scatter        [c0..cp-1]  root: [c0..cp-1]; none [c_rank]
//	Barrier        -           none                   none
type Spec struct {
	Kind       Kind
	Rank, Size int
	Root       int   // Reduce, Broadcast, Gather, Scatter; ignored otherwise
	Counts     []int // see the table above
	// SendCounts and RecvCounts are AllToAll's: the elements this rank sends
	// to and receives from each rank. Rank r's SendCounts[q] must equal rank
	// q's RecvCounts[r]. No rank can check that alone; a mismatch surfaces
	// at the receiver, possibly only as a timeout (see allToAllPairwise).
	SendCounts []int
	RecvCounts []int
	ElemSize   int  // bytes per element, >= 1
	ChunkBytes int  // largest message in bytes; 0 means DefaultChunkBytes
	InPlace    bool // see the table above
	// LocalSize is the number of ranks per node, ranks being numbered node
	// by node: node k holds ranks k·LocalSize … (k+1)·LocalSize-1. Zero, or
	// a value that does not divide Size, means unknown. Only hierarchical
	// algorithms use it.
	LocalSize int
	// Algorithm names the schedule, one of Registry's; empty leaves it to
	// Select.
	Algorithm string
	// Registry holds the schedules Algorithm may name; nil means the
	// built-in ones.
	Registry *Registry
}

func (s *Spec) rooted() bool {
	switch s.Kind {
	case Reduce, Broadcast, Gather, Scatter:
		return true
	}
	return false
}

// ChunkElems is the number of elements in a full chunk: the largest message
// of a schedule, never less than one element.
func (s Spec) ChunkElems() int {
	cb := s.ChunkBytes
	if cb == 0 {
		cb = DefaultChunkBytes
	}
	return max(1, cb/max(s.ElemSize, 1))
}

// Blocks returns the element count of each block of the Input or Output
// buffer on this rank, nil when the rank has no such buffer. With InPlace the
// aliased buffers are still both listed; the schedule touches only Output.
// s must be valid (see Validate).
func (s Spec) Blocks(buf Buffer) []int {
	one := func(n int) []int { return []int{n} }
	root := s.Rank == s.Root
	var in, out []int
	switch s.Kind {
	case AllReduce:
		in, out = one(s.Counts[0]), one(s.Counts[0])
	case Reduce:
		in = one(s.Counts[0])
		if root {
			out = one(s.Counts[0])
		}
	case Broadcast:
		out = one(s.Counts[0])
	case AllGather:
		in, out = one(s.Counts[s.Rank]), slices.Clone(s.Counts)
	case ReduceScatter:
		in, out = slices.Clone(s.Counts), one(s.Counts[s.Rank])
	case AllToAll:
		in, out = slices.Clone(s.SendCounts), slices.Clone(s.RecvCounts)
	case Gather:
		in = one(s.Counts[s.Rank])
		if root {
			out = slices.Clone(s.Counts)
		}
	case Scatter:
		if root {
			in = slices.Clone(s.Counts)
		}
		out = one(s.Counts[s.Rank])
	}
	if buf == Input {
		return in
	}
	if buf == Output {
		return out
	}
	return nil
}

// Validate reports what is wrong with s, if anything, as an error wrapping
// ErrBadSpec.
func (s Spec) Validate() error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("%w: %v: %s", ErrBadSpec, s.Kind, err)
	}
	return nil
}

func (s *Spec) validate() error {
	if !s.Kind.valid() {
		return errors.New("unknown kind")
	}
	if s.Size < 1 {
		return fmt.Errorf("size %d, want at least 1", s.Size)
	}
	if s.Rank < 0 || s.Rank >= s.Size {
		return fmt.Errorf("rank %d out of range [0, %d)", s.Rank, s.Size)
	}
	if s.rooted() && (s.Root < 0 || s.Root >= s.Size) {
		return fmt.Errorf("root %d out of range [0, %d)", s.Root, s.Size)
	}
	if s.ElemSize < 1 {
		return fmt.Errorf("element size %d, want at least 1", s.ElemSize)
	}
	if s.ChunkBytes < 0 {
		return fmt.Errorf("chunk bytes %d, want 0 (default) or more", s.ChunkBytes)
	}
	if s.LocalSize < 0 {
		return fmt.Errorf("local size %d, want 0 (unknown) or more", s.LocalSize)
	}
	switch s.Kind {
	case AllReduce, Reduce, Broadcast:
		if err := s.checkCounts("counts", s.Counts, 1); err != nil {
			return err
		}
	case AllGather, ReduceScatter, Gather, Scatter:
		if err := s.checkCounts("counts", s.Counts, s.Size); err != nil {
			return err
		}
	case AllToAll, Barrier:
		if len(s.Counts) != 0 {
			return fmt.Errorf("counts given (%d entries) but %v does not use them", len(s.Counts), s.Kind)
		}
	}
	if s.Kind == AllToAll {
		if err := s.checkCounts("send counts", s.SendCounts, s.Size); err != nil {
			return err
		}
		if err := s.checkCounts("recv counts", s.RecvCounts, s.Size); err != nil {
			return err
		}
		if s.SendCounts[s.Rank] != s.RecvCounts[s.Rank] {
			return fmt.Errorf("rank %d sends itself %d elements but receives %d", s.Rank, s.SendCounts[s.Rank], s.RecvCounts[s.Rank])
		}
	} else if len(s.SendCounts) != 0 || len(s.RecvCounts) != 0 {
		return fmt.Errorf("send/recv counts are for %v only", AllToAll)
	}
	if s.InPlace {
		switch s.Kind {
		case AllReduce, Reduce, AllGather:
		default:
			return fmt.Errorf("in-place is not defined for %v", s.Kind)
		}
	}
	if s.Algorithm != "" && s.Registry.generator(s.Kind, s.Algorithm) == nil {
		return fmt.Errorf("unknown algorithm %q (have %q)", s.Algorithm, s.Registry.Algorithms(s.Kind))
	}
	if check := requirements[s.Kind][s.Algorithm]; check != nil {
		if err := check(s); err != nil {
			return fmt.Errorf("algorithm %q %v", s.Algorithm, err)
		}
	}
	return nil
}

// checkCounts checks length and signs, and that the whole buffer's byte size
// fits in an int, so that offsets and byte arithmetic cannot overflow.
func (s *Spec) checkCounts(name string, c []int, want int) error {
	if len(c) != want {
		return fmt.Errorf("%s has %d entries, want %d", name, len(c), want)
	}
	total := 0
	for i, n := range c {
		if n < 0 {
			return fmt.Errorf("%s[%d] = %d is negative", name, i, n)
		}
		if n > (math.MaxInt/s.ElemSize)-total {
			return fmt.Errorf("%s overflow: total bytes exceed the int range", name)
		}
		total += n
	}
	return nil
}

// Build validates s and returns this rank's schedule. A generator that
// breaks the Builder's rules fails here with an error wrapping
// ErrBadSchedule, not with a panic in the caller: a registered generator
// is anyone's code.
func Build(s Spec) (*Schedule, error) { return new(Builder).Rebuild(s) }

// Rebuild is Build in b, which it resets first: its steps, dependency
// arena, segment tracks and tag maps are kept from one build to the next,
// and the schedule copies what it keeps out of them. A caller that builds
// many schedules keeps Builders to spare that garbage (a simulation
// builds one per rank, all at once).
func (b *Builder) Rebuild(s Spec) (sc *Schedule, err error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	alg := s.Algorithm
	if alg == "" {
		alg = Select(s)
	}
	defer func() {
		if r := recover(); r != nil {
			sc, err = nil, fmt.Errorf("%w: %v %q on rank %d: %v", ErrBadSchedule, s.Kind, alg, s.Rank, r)
		}
	}()
	b.reset(s.Rank, s.Size)
	b.Layout(Input, s.Blocks(Input))
	b.Layout(Output, s.Blocks(Output))
	s.Registry.generator(s.Kind, alg)(b, &s)
	return b.Build(alg), nil
}
