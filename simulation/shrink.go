package simulation

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/gocomms/gocomms/commerr"
)

// Shrink cuts cfg's fault plan down to a minimal one under which the run
// still fails, as fails judges its result, and returns it with the number
// of runs it took. It first removes faults one at a time, going round
// until none can go; then it simplifies each remaining fault (a shorter
// window, a lower probability, a factor nearer 1, a narrower scope),
// keeping each change under which the run still fails. A plan under which
// cfg does not fail comes back as it is.
//
// Shrink runs the simulator many times, and stops starting runs once
// budget of wall time has passed, returning the smallest failing plan it
// has found so far. The wall clock decides only when to stop, never what
// a run does.
func Shrink(cfg Config, fails func(*Result) bool, budget time.Duration) (Plan, int) {
	s := &shrinker{cfg: cfg, fails: fails, budget: budget, start: time.Now(), seen: map[string]bool{}}
	plan := slices.Clone(cfg.Faults)
	if !s.try(plan) {
		return plan, s.runs
	}
	// Removing one fault can make another one removable: go round until a
	// whole pass removes nothing.
	for removed := true; removed; {
		removed = false
		for i := 0; i < len(plan); {
			if cand := slices.Delete(slices.Clone(plan), i, i+1); s.try(cand) {
				plan, removed = cand, true
			} else {
				i++
			}
		}
	}
	for i := range plan {
		for simpler := true; simpler; {
			simpler = false
			for _, g := range s.simpler(plan[i]) {
				cand := slices.Clone(plan)
				cand[i] = g
				if s.try(cand) {
					plan, simpler = cand, true
					break
				}
			}
		}
	}
	return plan, s.runs
}

// The floors below which Shrink stops simplifying: finer steps would cost
// runs and tell nothing the coarser plan does not.
const (
	shrinkMinDuration = time.Microsecond
	shrinkMinP        = 0.001
	shrinkNearOne     = 0.1 // a factor this near 1 is left alone
)

// shrinker is one Shrink in progress.
type shrinker struct {
	cfg    Config
	fails  func(*Result) bool
	budget time.Duration
	start  time.Time
	runs   int
	seen   map[string]bool // by plan: whether it failed; runs are deterministic
	last   *Result         // the latest failing run's
}

// try reports whether the run fails under plan: false once the budget is
// spent.
func (s *shrinker) try(plan Plan) bool {
	key := plan.String()
	if failed, ok := s.seen[key]; ok {
		return failed
	}
	if time.Since(s.start) >= s.budget {
		return false
	}
	cfg := s.cfg
	cfg.Faults = plan
	res, err := Run(cfg)
	s.runs++
	failed := err == nil && s.fails(res)
	s.seen[key] = failed
	if failed {
		s.last = res
	}
	return failed
}

// simpler lists the faults one step simpler than f, in the order Shrink
// tries them.
func (s *shrinker) simpler(f Fault) []Fault {
	var out []Fault
	with := func(change func(*Fault)) {
		g := f
		change(&g)
		out = append(out, g)
	}
	sh := shapes[f.Kind]
	if sh.window {
		for _, d := range shorter(f.For) {
			with(func(g *Fault) { g.For = d })
		}
	}
	if sh.p {
		for _, p := range []float64{shrinkMinP, f.P / 2} {
			if p >= shrinkMinP && p < f.P {
				with(func(g *Fault) { g.P = p })
			}
		}
	}
	if sh.factor && math.Abs(f.Factor-1) > shrinkNearOne {
		for _, x := range []float64{1 + math.Copysign(shrinkNearOne, f.Factor-1), 1 + (f.Factor-1)/2} {
			with(func(g *Fault) { g.Factor = x })
		}
	}
	if sh.by {
		for _, d := range shorter(f.By) {
			with(func(g *Fault) { g.By = d })
		}
	}
	for _, rs := range s.narrower(f) {
		with(func(g *Fault) { g.Ranks = rs })
	}
	return out
}

// shorter lists the durations to try in place of d: the floor, then half.
func shorter(d time.Duration) []time.Duration {
	var out []time.Duration
	if d > shrinkMinDuration {
		out = append(out, shrinkMinDuration)
	}
	if d/2 > shrinkMinDuration {
		out = append(out, d/2)
	}
	return out
}

// narrower lists the scopes to try in place of f's: every link narrows to
// one rank's, one rank's to one link, each among the ranks the latest
// failure involves; a partition's side loses half, or one end.
func (s *shrinker) narrower(f Fault) [][]int {
	var out [][]int
	switch shapes[f.Kind].scope {
	case linkScope:
		for _, r := range s.suspects() {
			switch {
			case len(f.Ranks) == 0:
				out = append(out, []int{r})
			case len(f.Ranks) == 1 && r != f.Ranks[0]:
				out = append(out, []int{min(r, f.Ranks[0]), max(r, f.Ranks[0])})
			}
		}
	case groupScope:
		if n := len(f.Ranks); n > 1 {
			out = append(out, slices.Clone(f.Ranks[:n/2]), slices.Clone(f.Ranks[n/2:]),
				slices.Clone(f.Ranks[1:]), slices.Clone(f.Ranks[:n-1]))
		}
	}
	return out
}

// maxSuspects bounds the ranks narrower tries, and so the runs a scope
// costs on a large job.
const maxSuspects = 4

// suspects are the ranks the latest failing run points at: the live ones
// whose operations failed or never ended, and the ranks their errors name.
func (s *shrinker) suspects() []int {
	var rs []int
	for i, o := range s.last.Ranks {
		if o.Crashed || o.Err == nil && o.Pending == 0 {
			continue
		}
		rs = append(rs, i)
		var oe *commerr.OpError
		if errors.As(o.Err, &oe) {
			rs = append(rs, oe.Ranks...)
		}
	}
	slices.Sort(rs)
	rs = slices.Compact(rs)
	return rs[:min(len(rs), maxSuspects)]
}
