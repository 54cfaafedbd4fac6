package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gocomms/gocomms/simulation"
)

// chaosFlags are `commnode sim`'s flags that draw faults from the seed
// and shrink the plans of failing runs.
type chaosFlags struct {
	n            int // faults to draw
	within       time.Duration
	kindNames    string
	kinds        []simulation.FaultKind // kindNames parsed; nil for every kind
	shrink       bool
	shrinkBudget time.Duration
}

// maxShrinks is how many failing seeds of a sweep --shrink shrinks: each
// may take its whole budget.
const maxShrinks = 3

func (c *chaosFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&c.n, "chaos", 0, "draw this many faults from the seed and add them to the --faults plan")
	fs.DurationVar(&c.within, "within", time.Millisecond, "virtual time the drawn faults start within, and the longest they last")
	fs.StringVar(&c.kindNames, "kinds", "", "fault kinds --chaos draws, comma-separated (default: every kind)")
	fs.BoolVar(&c.shrink, "shrink", false, "shrink a failing run's plan to a minimal one that still fails, and print its replay")
	fs.DurationVar(&c.shrinkBudget, "shrink-budget", time.Minute, "wall time each shrink may take")
}

// check validates the flags and parses --kinds.
func (c *chaosFlags) check() error {
	switch {
	case c.n < 0:
		return fmt.Errorf("--chaos %d: want 0 or more faults", c.n)
	case c.within <= 0:
		return fmt.Errorf("--within %v: want a positive duration", c.within)
	case c.shrinkBudget <= 0:
		return fmt.Errorf("--shrink-budget %v: want a positive duration", c.shrinkBudget)
	}
	if c.kindNames == "" {
		return nil
	}
	for name := range strings.SplitSeq(c.kindNames, ",") {
		k, err := simulation.ParseKind(strings.TrimSpace(name))
		if err != nil {
			return fmt.Errorf("--kinds: %w", err)
		}
		c.kinds = append(c.kinds, k)
	}
	return nil
}

// plan is base followed by the faults drawn from seed for a job of ranks.
func (c *chaosFlags) plan(base simulation.Plan, seed uint64, ranks int) simulation.Plan {
	if c.n == 0 {
		return base
	}
	// Clipped, so that the seeds of a sweep never append into one array.
	return append(slices.Clip(base), simulation.RandomPlan(seed, ranks, c.n, c.within, c.kinds)...)
}

// replayWith is the command that runs seed again under plan, written out
// in --faults, with every other flag as given: a drawn plan replays
// without --chaos.
func (f simFlags) replayWith(seed uint64, plan simulation.Plan) string {
	f.faults = plan.String()
	return f.replay(seed)
}

// shrunkReport is a failing run's plan shrunk to a minimal one under which
// the run still breaks an invariant.
type shrunkReport struct {
	From   int     `json:"from_faults"`
	Faults string  `json:"faults"`
	Count  int     `json:"count"`
	Runs   int     `json:"runs"`
	WallS  float64 `json:"wall_s"`
	Replay string  `json:"replay"`
}

// shrink shrinks the plan of cfg, a run that broke an invariant.
func (f simFlags) shrink(cfg simulation.Config, stderr io.Writer) *shrunkReport {
	fmt.Fprintf(stderr, "shrinking the %d faults of seed %d (budget %v)\n", len(cfg.Faults), cfg.Seed, f.chaos.shrinkBudget)
	start := time.Now()
	plan, runs := simulation.Shrink(cfg, func(r *simulation.Result) bool { return !r.OK() }, f.chaos.shrinkBudget)
	return &shrunkReport{
		From: len(cfg.Faults), Faults: plan.String(), Count: len(plan), Runs: runs,
		WallS: time.Since(start).Seconds(), Replay: f.replayWith(cfg.Seed, plan),
	}
}

// summary says what shrinking did: "12 faults to 1 in 30 runs, 1.2 s".
func (s *shrunkReport) summary() string {
	return fmt.Sprintf("%d faults to %d in %d runs, %.1f s", s.From, s.Count, s.Runs, s.WallS)
}

// print writes the shrunk plan's lines of a run's report, if it was
// shrunk.
func (s *shrunkReport) print(w io.Writer) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "shrunk    %s\nminimal   %s\n", s.summary(), s.Replay)
}
