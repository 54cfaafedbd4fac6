package algorithms

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// RecursiveDoublingMaxBytes is the largest AllReduce, in bytes, for which
// Select prefers recursive doubling (log2 p latency-bound rounds of the whole
// tensor) to the ring (2(p-1) bandwidth-optimal rounds of 1/p of it) and to
// Rabenseifner's algorithm (2·log2 p rounds of halves that shrink).
const RecursiveDoublingMaxBytes = 64 << 10

// RingMinSegmentBytes is the smallest ring segment (n·ElemSize/p bytes, the
// share of each rank) for which Select prefers the ring to Rabenseifner's
// algorithm, for an AllReduce above RecursiveDoublingMaxBytes.
//
// With alpha per message and beta per byte, the ring costs
// 2(p-1)·alpha + 2(p-1)/p·n·beta and Rabenseifner
// 2·log2(p')·alpha + 2(p'-1)/p'·n·beta, p' = floorPow2(p), plus
// 2·(alpha + n·beta) to fold and unfold when p is not a power of two. The
// bandwidth terms match, so the ring is worth its 2(p-1) rounds only where
// its extra latency, about 2p·alpha, is small next to the bandwidth term,
// 2p·(n/p)·beta: where a segment takes longer to send than a message takes
// to arrive, n/p > alpha/beta. There the fold, which doubles what a folding
// rank sends and receives, makes the ring the faster whenever p is not a
// power of two; at powers of two it loses only its latency term, and talks
// to two fixed peers instead of log2 p. This engine's messages cost about
// 76 µs at about 1 GB/s (in one process over TCP, docs/PERFORMANCE.md), an
// alpha/beta of about 72 KiB: at 128 KiB segments the ring's latency is
// under 0.6 of its bandwidth term. Smaller segments leave the ring
// latency-bound, the more so as p grows: at 100,000 ranks it runs 199,998
// rounds to Rabenseifner's 34.
const RingMinSegmentBytes = 128 << 10

// A Generator writes one rank's program of a collective for a valid Spec,
// appending steps to b. It must be a function of the Spec alone: every
// rank runs it for itself, and what its peers expect of it follows from
// theirs.
type Generator func(b *Builder, s *Spec)

type algorithm struct {
	name string
	gen  Generator
}

// requirements holds the checks of the algorithms that serve only some
// valid specs, by kind and name; Validate applies them. Defaults have
// none: they serve every valid spec.
var requirements = map[Kind]map[string]func(*Spec) error{
	AllToAll: {"bruck": uniformCounts},
}

// table holds each kind's algorithms, default first.
type table [Barrier + 1][]algorithm

// builtin lists the built-in algorithms. It is never written: Register
// adds to a copy.
var builtin = table{
	AllReduce: {
		{"ring", allReduceRing},
		{"recursive_doubling", allReduceDoubling},
		{"rabenseifner", allReduceHalving},
		{"double_binary_tree", allReduceDoubleTree},
		{"direct", allReduceDirect},
		{"hierarchical", allReduceHierarchical},
	},
	Reduce: {
		{"binomial", reduceTree},
		{"rabenseifner", reduceHalving},
	},
	Broadcast: {
		{"binomial", broadcastTree},
		{"chain", broadcastChain},
		{"scatter_allgather", broadcastScatterAllGather},
	},
	AllGather:     {{"ring", allGatherRing}, {"recursive_doubling", allGatherDoubling}, {"bruck", allGatherBruck}},
	ReduceScatter: {{"ring", reduceScatterRing}, {"recursive_halving", reduceScatterHalving}, {"pairwise", reduceScatterPairwise}},
	AllToAll: {
		{"pairwise", allToAllPairwise},
		{"bruck", allToAllBruck},
	},
	Gather: {
		{"binomial", gatherTree},
		{"linear", gatherLinear},
	},
	Scatter: {
		{"binomial", scatterTree},
		{"linear", scatterLinear},
	},
	Barrier: {
		{"dissemination", barrierDissemination},
		{"linear", barrierLinear},
	},
}

// A Registry names the algorithms a Spec may ask for: the built-in ones,
// then those Register added. A name, once in a registry, names the same
// generator for good, so a schedule built from one is a function of its
// Spec. A Registry is safe for concurrent use and must not be copied; the
// zero value holds the built-in algorithms, and so does a nil *Registry,
// for reading.
type Registry struct {
	// added is the table Build reads, nil until the first Register.
	// Register replaces it whole, so that a Build running meanwhile reads
	// the old table or the new one, never half of either.
	added atomic.Pointer[table]
}

// NewRegistry returns a registry holding the built-in algorithms alone.
func NewRegistry() *Registry { return new(Registry) }

func (r *Registry) load() *table {
	if r != nil {
		if t := r.added.Load(); t != nil {
			return t
		}
	}
	return &builtin
}

// Register adds a schedule of kind under name, after those r has: a Spec
// whose Registry is r and whose Algorithm is name builds with gen. Every
// rank of a job must register the same schedules. Register fails on an
// unknown kind, an empty name, or a name kind already has (ErrBadSpec),
// and on a schedule the checker refuses (ErrBadSchedule, with Check's
// reason): it proves gen with Check on 1 to 5 ranks and small counts,
// uneven ones, several messages each, in place and not, which takes
// milliseconds. A schedule must serve every valid Spec of its kind. Check
// proves it at the sizes a job will use.
func (r *Registry) Register(kind Kind, name string, gen Generator) error {
	switch {
	case !kind.valid():
		return fmt.Errorf("%w: register: unknown kind %d", ErrBadSpec, uint8(kind))
	case name == "" || gen == nil:
		return fmt.Errorf("%w: register %v: a schedule needs a name and a generator", ErrBadSpec, kind)
	case slices.Contains(r.Algorithms(kind), name):
		return fmt.Errorf("%w: register %v: %q is taken", ErrBadSpec, kind, name)
	}
	if err := admit(kind, name, gen); err != nil {
		return err
	}
	for {
		old, t := r.added.Load(), builtin
		if old != nil {
			t = *old
		}
		if slices.ContainsFunc(t[kind], func(a algorithm) bool { return a.name == name }) {
			return fmt.Errorf("%w: register %v: %q is taken", ErrBadSpec, kind, name)
		}
		t[kind] = append(slices.Clip(t[kind]), algorithm{name, gen})
		if r.added.CompareAndSwap(old, &t) {
			return nil
		}
	}
}

func (r *Registry) generator(k Kind, name string) Generator {
	if !k.valid() {
		return nil
	}
	for _, a := range r.load()[k] {
		if a.name == name {
			return a.gen
		}
	}
	return nil
}

// Algorithms returns the names of r's algorithms of kind k, default
// first, then those Register added.
func (r *Registry) Algorithms(k Kind) []string {
	if !k.valid() {
		return nil
	}
	all := r.load()[k]
	names := make([]string, 0, len(all))
	for _, a := range all {
		names = append(names, a.name)
	}
	return names
}

// Select returns the algorithm Build uses when s.Algorithm is empty. It
// depends only on fields every rank shares, so all ranks choose alike.
//
// AllReduce uses recursive doubling when the tensor is at most
// RecursiveDoublingMaxBytes or has fewer elements than there are ranks (the
// other two would leave segments empty); the ring when every rank's ring
// segment is at least RingMinSegmentBytes, or, where LocalSize puts the
// ranks on several hosts, the hierarchical schedule, whose ring traffic
// stays inside each host but for a LocalSize-th of it; and Rabenseifner's
// algorithm, with its O(log p) rounds, otherwise. Other kinds take the
// first rule of tuned they meet, else their default.
func Select(s Spec) string {
	if !s.Kind.valid() {
		return ""
	}
	if s.Kind == AllReduce && len(s.Counts) == 1 {
		n, p, elem := s.Counts[0], max(s.Size, 1), max(s.ElemSize, 1)
		switch {
		case n < p || n <= RecursiveDoublingMaxBytes/elem:
			return "recursive_doubling"
		case n/p >= (RingMinSegmentBytes+elem-1)/elem: // in elements: no overflow
			if l := s.LocalSize; l > 1 && p%l == 0 && p > l {
				return "hierarchical"
			}
			return "ring"
		}
		return "rabenseifner"
	}
	bytes := 0
	for _, c := range s.Counts {
		bytes += c * max(s.ElemSize, 1) // Validate bounds the total
	}
	for _, r := range tuned[s.Kind] {
		if s.Size >= r.minRanks && bytes >= r.minBytes {
			return r.algorithm
		}
	}
	return builtin[s.Kind][0].name // Register adds after the defaults
}

// tuned holds the choices measured rather than derived: for each kind, in
// order, the least ranks and bytes (of the whole Counts) from which an
// algorithm beats the default. The figures are `commnode bench --algo
// all` at 2, 4 and 8 processes over loopback TCP, the median of three
// runs (docs/ALGORITHMS.md): from 256 KiB at 4 and 8 processes, a linear
// gather or scatter, one message per rank straight to or from the root,
// takes 13% to 36% less time than the binomial tree's forwarding, but for
// a tie at 512 KiB scattered over 4.
var tuned = map[Kind][]struct {
	minRanks, minBytes int
	algorithm          string
}{
	Gather:  {{4, 256 << 10, "linear"}},
	Scatter: {{4, 256 << 10, "linear"}},
}
