package simulation

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
)

var harmlessKinds = []FaultKind{Loss, Duplicate, Delay, Jitter, Slow}

// someRankFailed is the failure Shrink's tests look for.
func someRankFailed(r *Result) bool {
	return slices.ContainsFunc(r.Ranks, func(o Outcome) bool { return o.Err != nil })
}

// shrinkConfig is a 2-iteration all-reduce on 8 ranks of two nodes under
// plan.
func shrinkConfig(plan Plan) Config {
	cfg := config(algorithms.AllReduce, 8, 20000, 5)
	cfg.Topology = DGXH100(2)
	cfg.ChunkBytes = 8 << 10
	cfg.Faults = plan
	return cfg
}

// TestShrinkFindsTheCrash: among many harmless faults, which no operation
// may fail under, the one crash is what makes ranks fail, and Shrink
// leaves it alone. The caller's plan is untouched.
func TestShrinkFindsTheCrash(t *testing.T) {
	crash := Fault{Kind: Crash, Rank: 5, At: 10 * time.Microsecond}
	plan := RandomPlan(7, 8, 12, 100*time.Microsecond, harmlessKinds)
	plan = slices.Insert(plan, 6, crash)
	orig := slices.Clone(plan)
	cfg := shrinkConfig(plan)
	if !someRankFailed(mustRun(t, cfg)) {
		t.Fatalf("no rank failed under %q", plan)
	}
	got, runs := Shrink(cfg, someRankFailed, time.Minute)
	if !reflect.DeepEqual(got, Plan{crash}) {
		t.Errorf("shrank %q to %q, want the crash alone", plan, got)
	}
	if runs < len(plan) {
		t.Errorf("%d runs, fewer than one per fault", runs)
	}
	if !reflect.DeepEqual(plan, orig) {
		t.Errorf("Shrink changed its argument's plan to %q", plan)
	}
}

// TestShrinkSimplifies: a wide, long fault that breaks connections comes
// back narrower or shorter, alone, and still failing.
func TestShrinkSimplifies(t *testing.T) {
	for _, text := range []string{
		"delay:at=0s,for=1ms,by=5µs;flap:at=5µs,for=5s;loss:rank=3,at=0s,for=1ms,p=0.2",
		"partition:ranks=0-5,at=5µs,for=5s;jitter:at=0s,for=1ms,by=3µs",
		"corrupt:at=0s,for=5s,p=0.3;slow:at=0s,for=1ms,factor=8",
	} {
		plan, err := ParsePlan(text)
		if err != nil {
			t.Fatal(err)
		}
		cfg := shrinkConfig(plan)
		got, _ := Shrink(cfg, someRankFailed, time.Minute)
		if len(got) != 1 || got[0].Kind.Harmless() {
			t.Errorf("%s: shrank to %q, want the one harmful fault", text, got)
			continue
		}
		g := got[0]
		f := plan[slices.IndexFunc(plan, func(f Fault) bool { return f.Kind == g.Kind })]
		t.Logf("%s: shrank to %v", text, g)
		if g.For >= f.For && g.P >= f.P && len(g.Ranks) == len(f.Ranks) {
			t.Errorf("%s: %v is no simpler than %v", text, g, f)
		}
		cfg.Faults = got
		if !someRankFailed(mustRun(t, cfg)) {
			t.Errorf("%s: no rank fails under the shrunk plan %q", text, got)
		}
	}
}

// TestShrinkKeepsToBudget: Shrink starts no run once its budget is spent,
// so it overruns it by at most the run in flight, and a plan under which
// nothing fails comes back as it is.
func TestShrinkKeepsToBudget(t *testing.T) {
	plan := append(RandomPlan(3, 8, 30, 100*time.Microsecond, harmlessKinds), Fault{Kind: Crash, Rank: 2, At: 0})
	cfg := shrinkConfig(plan)
	// The budget is a few of the fastest runs, and the overrun allowed a
	// few of the slowest: on a loaded machine one run may take ten times
	// another.
	fastest, slowest := time.Duration(math.MaxInt64), time.Duration(0)
	for range 5 {
		start := time.Now()
		mustRun(t, cfg)
		fastest, slowest = min(fastest, time.Since(start)), max(slowest, time.Since(start))
	}

	if got, runs := Shrink(cfg, someRankFailed, 0); runs != 0 || !reflect.DeepEqual(got, plan) {
		t.Errorf("no budget: %d runs, plan %q", runs, got)
	}
	budget := 3 * fastest
	start := time.Now()
	_, runs := Shrink(cfg, someRankFailed, budget)
	// The slack covers the collector and the scheduler, which can stall
	// a run of a few milliseconds for longer than the run itself.
	if took := time.Since(start); took > budget+5*slowest+100*time.Millisecond {
		t.Errorf("took %v on a budget of %v, with runs of %v to %v", took, budget, fastest, slowest)
	}
	if runs >= len(plan) {
		t.Errorf("%d runs on a budget of about 3", runs)
	}

	cfg.Faults = plan[:len(plan)-1] // harmless: nothing fails
	if got, runs := Shrink(cfg, someRankFailed, time.Minute); runs != 1 || !reflect.DeepEqual(got, cfg.Faults) {
		t.Errorf("a plan that does not fail: %d runs, plan %q", runs, got)
	}
}
