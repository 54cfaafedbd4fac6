package algorithms

// RecursiveDoublingMaxBytes is the largest AllReduce, in bytes, for which
// Select prefers recursive doubling (log2 p latency-bound rounds of the whole
// tensor) to the ring (2(p-1) bandwidth-optimal rounds of 1/p of it).
const RecursiveDoublingMaxBytes = 64 << 10

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
	Barrier: {{"dissemination", barrierDissemination}},
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
// ring would leave segments empty), and the ring otherwise. Every other kind
// uses its default.
func Select(s Spec) string {
	if !s.Kind.valid() {
		return ""
	}
	if s.Kind == AllReduce && len(s.Counts) == 1 {
		n := s.Counts[0]
		if n < s.Size || n <= RecursiveDoublingMaxBytes/max(s.ElemSize, 1) {
			return "recursive_doubling"
		}
		return "ring"
	}
	return registry[s.Kind][0].name
}
