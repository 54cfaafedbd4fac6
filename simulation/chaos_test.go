package simulation

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/algorithms"
)

// TestRandomPlanIsDeterministic: a plan is a function of its arguments,
// the seed matters, and the plan replays from its printout.
func TestRandomPlanIsDeterministic(t *testing.T) {
	plans := map[string]bool{}
	for seed := range uint64(20) {
		a := RandomPlan(seed, 16, 10, time.Millisecond, nil)
		b := RandomPlan(seed, 16, 10, time.Millisecond, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two draws differ:\n%v\n%v", seed, a, b)
		}
		q, err := ParsePlan(a.String())
		if err != nil || !reflect.DeepEqual(q, a) {
			t.Fatalf("seed %d: %q parsed back as %v, %v", seed, a, q, err)
		}
		plans[a.String()] = true
	}
	if len(plans) != 20 {
		t.Errorf("20 seeds drew %d distinct plans", len(plans))
	}
}

// TestRandomPlanIsValid: over many seeds, job sizes from 1 rank up and
// kind sets, every drawn fault is valid for the job and within the ranges
// RandomPlan promises, and some rank always stays up.
func TestRandomPlanIsValid(t *testing.T) {
	const within = 2 * time.Millisecond
	kindSets := [][]FaultKind{nil, {Crash, Restart}, {Partition, OneWay}, {Crash, Loss}, {Skew, Slow}}
	sizes := []int{33, 1000}
	for r := 1; r <= 20; r++ {
		sizes = append(sizes, r)
	}
	for _, ranks := range sizes {
		for _, kinds := range kindSets {
			for seed := range uint64(50) {
				p := RandomPlan(seed, ranks, 12, within, kinds)
				if err := p.validate(ranks); err != nil {
					t.Fatalf("%d ranks, kinds %v, seed %d: %v", ranks, kinds, seed, err)
				}
				if ranks > 1 && len(p) != 12 {
					t.Fatalf("%d ranks, kinds %v, seed %d: %d faults, want 12", ranks, kinds, seed, len(p))
				}
				down := map[int]bool{}
				for _, f := range p {
					checkDrawn(t, f, ranks, within, kinds)
					if f.Kind == Crash || f.Kind == Restart {
						down[f.Rank] = true
					}
				}
				if len(down) >= ranks {
					t.Fatalf("%d ranks, seed %d: %q takes every rank down", ranks, seed, p)
				}
			}
		}
	}
	if p := RandomPlan(1, 1, 5, within, []FaultKind{Crash, Partition, Loss}); len(p) != 0 {
		t.Errorf("a 1-rank job drew %q from kinds it cannot suffer", p)
	}
	if p := RandomPlan(1, 1, 5, within, nil); len(p) != 5 {
		t.Errorf("a 1-rank job drew %q, want 5 faults of the kinds it can suffer", p)
	}
}

// checkDrawn fails t unless f is of one of kinds (any, if nil), suits a
// job of ranks ranks, and lies within the ranges RandomPlan draws from.
func checkDrawn(t *testing.T, f Fault, ranks int, within time.Duration, kinds []FaultKind) {
	t.Helper()
	sh := shapes[f.Kind]
	bad := func(what string) { t.Fatalf("%d ranks, within %v: %v: %s", ranks, within, f, what) }
	if kinds != nil && !slices.Contains(kinds, f.Kind) {
		bad("a kind not asked for")
	}
	if ranks == 1 && (sh.scope == linkScope || sh.scope == groupScope || f.Kind == Crash || f.Kind == Restart) {
		bad("a kind a 1-rank job cannot suffer")
	}
	if f.At < 0 || f.At >= within {
		bad("at outside [0, within)")
	}
	if sh.window != (f.For > 0) || sh.window && (f.For < within/10 || f.For > within) {
		bad("for outside [within/10, within]")
	}
	if sh.p != (f.P > 0) || f.P > 0.3 {
		bad("p outside (0, 0.3]")
	}
	lo, hi := 1.5, 10.0
	if f.Kind == Skew {
		lo, hi = 0.5, 4
	}
	if sh.factor != (f.Factor != 0) || sh.factor && (f.Factor < lo || f.Factor > hi) {
		bad("factor out of range")
	}
	if sh.by != (f.By > 0) || f.By > within/10 {
		bad("by outside (0, within/10]")
	}
	if sh.scope == groupScope && f.Ranks[len(f.Ranks)-1]-f.Ranks[0] != len(f.Ranks)-1 {
		bad("a partition that is not one span")
	}
}

// TestRandomPlanDrawsEveryKind: over enough seeds every kind, and every
// scope of a link fault, comes up.
func TestRandomPlanDrawsEveryKind(t *testing.T) {
	kinds := map[FaultKind]bool{}
	scopes := map[int]bool{}
	for seed := range uint64(100) {
		for _, f := range RandomPlan(seed, 8, 4, time.Millisecond, nil) {
			kinds[f.Kind] = true
			if shapes[f.Kind].scope == linkScope {
				scopes[len(f.Ranks)] = true
			}
		}
	}
	for _, k := range Kinds() {
		if !kinds[k] {
			t.Errorf("100 plans drew no %v", k)
		}
	}
	if len(scopes) != 3 {
		t.Errorf("link faults drew scopes of %v ranks, want every link, one rank and one link", scopes)
	}
}

// TestRandomPlansKeepInvariants is the property under chaos: over random
// small jobs, collectives, algorithms and drawn plans of every kind, every
// run keeps the invariants.
func TestRandomPlansKeepInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 3).Draw(t, "nodes")
		fewest := 1
		if nodes == 1 {
			fewest = 2 // a 1-rank job has no links to break
		}
		ranks := nodes * rapid.IntRange(fewest, 12/nodes).Draw(t, "ranksPerNode")
		op := rapid.SampledFrom(ops).Draw(t, "op")
		cfg := config(op, ranks, rapid.IntRange(0, 2000).Draw(t, "count"), rapid.Uint64().Draw(t, "seed"))
		cfg.Topology = DGXH100(nodes)
		cfg.Root = rapid.IntRange(0, ranks-1).Draw(t, "root")
		cfg.Iterations = rapid.IntRange(1, 3).Draw(t, "iterations")
		cfg.ChunkBytes = rapid.SampledFrom([]int{0, 1 << 10, 8 << 10}).Draw(t, "chunk")
		cfg.Algorithm = rapid.SampledFrom(append([]string{""}, algorithms.NewRegistry().Algorithms(op)...)).Draw(t, "algorithm")
		within := time.Duration(rapid.IntRange(10, 2000).Draw(t, "withinUs")) * time.Microsecond
		cfg.Faults = RandomPlan(rapid.Uint64().Draw(t, "planSeed"), ranks, rapid.IntRange(1, 6).Draw(t, "faults"), within, nil)
		if res := mustRun(t, cfg); !res.OK() {
			t.Fatalf("%s", describe(cfg, res))
		}
	})
}
