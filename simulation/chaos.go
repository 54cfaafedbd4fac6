package simulation

import (
	"math/rand/v2"
	"slices"
	"time"
)

// chaosStream tells RandomPlan's source apart from a run's loop, which a
// seed also seeds: drawing a plan from seed s and running seed s must not
// share a sequence.
const chaosStream = 0xc4a05f1a9b3e7d21

// RandomPlan draws n faults for a job of ranks ranks from seed, each of a
// kind from kinds (every kind when kinds is nil). A fault starts in
// [0, within); a window lasts from within/10 to within; a probability is
// in (0, 0.3], a slow factor in [1.5, 10], a skew in [0.5, 4], a delay or
// jitter up to within/10; a link fault touches every link, one rank's or
// one; a partition cuts off a span of ranks. Every fault is valid for the
// job: kinds the job is too small for are not drawn (a 1-rank job gets no
// link, partition, crash or restart faults), and if no kind is left the
// plan is empty. Crashes and restarts together leave at least one rank up.
// The same arguments give the same plan, and drawing it leaves the run's
// own seeded choices untouched. within must be positive.
func RandomPlan(seed uint64, ranks int, n int, within time.Duration, kinds []FaultKind) Plan {
	if kinds == nil {
		kinds = Kinds()
	}
	kinds = slices.DeleteFunc(slices.Clone(kinds), func(k FaultKind) bool { return !drawable(k, ranks) })
	if len(kinds) == 0 || n <= 0 {
		return nil
	}
	d := &drawer{rng: rand.New(rand.NewPCG(seed, chaosStream)), ranks: ranks, within: within}
	p := make(Plan, n)
	for i := range p {
		p[i] = d.fault(kinds[d.rng.IntN(len(kinds))])
	}
	return p
}

// drawable reports whether a job of ranks ranks can suffer kind k at all.
func drawable(k FaultKind, ranks int) bool {
	switch {
	case k < Crash || k > StoreOutage:
		return false
	case k == Crash, k == Restart: // one rank must stay up
		return ranks >= 2
	case shapes[k].scope == linkScope, shapes[k].scope == groupScope:
		return ranks >= 2
	}
	return ranks >= 1
}

// drawer draws one plan's faults.
type drawer struct {
	rng    *rand.Rand
	ranks  int
	within time.Duration
	down   []int // ranks crashed or restarted so far, sorted
}

func (d *drawer) fault(k FaultKind) Fault {
	sh := shapes[k]
	f := Fault{Kind: k, At: time.Duration(d.rng.Int64N(int64(d.within)))}
	switch sh.scope {
	case rankScope:
		f.Rank = d.rng.IntN(d.ranks)
		if k == Crash || k == Restart {
			f.Rank = d.downable()
		}
	case linkScope:
		switch d.rng.IntN(3) {
		case 1:
			f.Ranks = []int{d.rng.IntN(d.ranks)}
		case 2:
			a := d.rng.IntN(d.ranks)
			b := (a + 1 + d.rng.IntN(d.ranks-1)) % d.ranks
			f.Ranks = []int{min(a, b), max(a, b)}
		}
	case groupScope:
		// A span prints short however many ranks it covers.
		size := 1 + d.rng.IntN(d.ranks-1)
		lo := d.rng.IntN(d.ranks - size + 1)
		f.Ranks = make([]int, size)
		for i := range f.Ranks {
			f.Ranks[i] = lo + i
		}
	}
	if sh.window {
		lo := max(d.within/10, 1)
		f.For = lo + time.Duration(d.rng.Int64N(int64(d.within-lo)+1))
	}
	if sh.p {
		f.P = float64(1+d.rng.IntN(300)) / 1000 // (0, 0.3], short to print
	}
	if sh.factor {
		if k == Slow {
			f.Factor = float64(150+d.rng.IntN(851)) / 100 // [1.5, 10]
		} else {
			f.Factor = float64(50+d.rng.IntN(351)) / 100 // [0.5, 4]
		}
	}
	if sh.by {
		f.By = 1 + time.Duration(d.rng.Int64N(int64(max(d.within/10, 1))))
	}
	return f
}

// downable draws a rank to crash or restart such that some rank stays up:
// once all but one are down, only a rank already down may go down again.
func (d *drawer) downable() int {
	if len(d.down) < d.ranks-1 {
		r := d.rng.IntN(d.ranks)
		if i, found := slices.BinarySearch(d.down, r); !found {
			d.down = slices.Insert(d.down, i, r)
		}
		return r
	}
	return d.down[d.rng.IntN(len(d.down))]
}
