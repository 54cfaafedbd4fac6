package algorithms

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

// A generator writes one rank's program for a valid spec.
type generator func(b *Builder, s *Spec)

type algorithm struct {
	name string
	gen  generator
}

// registry lists the algorithms of each kind, default first.
var registry = [...][]algorithm{
	AllReduce: {
		{"ring", allReduceRing},
		{"recursive_doubling", allReduceDoubling},
		{"rabenseifner", allReduceHalving},
	},
	Reduce:        {{"binomial_tree", reduceTree}},
	Broadcast:     {{"binomial_tree", broadcastTree}},
	AllGather:     {{"ring", allGatherRing}},
	ReduceScatter: {{"ring", reduceScatterRing}},
	AllToAll:      {{"pairwise", allToAllPairwise}},
	Gather: {
		{"binomial_tree", gatherTree},
		{"linear", gatherLinear},
	},
	Scatter: {
		{"binomial_tree", scatterTree},
		{"linear", scatterLinear},
	},
	Barrier: {
		{"dissemination", barrierDissemination},
		{"linear", barrierLinear},
	},
}

func generatorFor(k Kind, name string) generator {
	if !k.valid() {
		return nil
	}
	for _, a := range registry[k] {
		if a.name == name {
			return a.gen
		}
	}
	return nil
}

// Algorithms returns the algorithm names valid for k, default first.
func Algorithms(k Kind) []string {
	if !k.valid() {
		return nil
	}
	names := make([]string, 0, len(registry[k]))
	for _, a := range registry[k] {
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
// segment is at least RingMinSegmentBytes; and Rabenseifner's algorithm,
// with its O(log p) rounds, otherwise. Every other kind uses its default.
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
			return "ring"
		}
		return "rabenseifner"
	}
	return registry[s.Kind][0].name
}
