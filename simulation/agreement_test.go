package simulation

import (
	"slices"
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
)

// TestAgreementUnderCrashes runs the fault-tolerant agreement after
// all-reduces on seeds that crash ranks, coordinators included, before
// and while it runs: the survivors all decide, alike, on the crashed ranks
// (the run checks it), in about 5 messages per rank per round.
func TestAgreementUnderCrashes(t *testing.T) {
	seeds := uint64(200)
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		nodes := 1 + int(seed%2)
		ranks := nodes * (1 + int(seed/2%6))
		if ranks < 2 {
			ranks = 2 * nodes
		}
		cfg := config(algorithms.AllReduce, ranks, 100, seed)
		cfg.Topology = DGXH100(nodes)
		cfg.Iterations = int(seed % 2)
		cfg.Agree = true
		// Crash up to a third of the ranks in the first 60 µs.
		cfg.Faults = crashes(seed, ranks, 1+ranks/3, 60*time.Microsecond)
		res := mustRun(t, cfg)
		if !res.OK() {
			t.Errorf("seed %d (%d ranks, %q): %v", seed, ranks, cfg.Faults, res.Violations)
			continue
		}
		a := res.Agreement
		var crashed []int
		for r, o := range res.Ranks {
			if o.Crashed {
				crashed = append(crashed, r)
			}
		}
		if a.Deciders < ranks-len(crashed) {
			t.Errorf("seed %d: %d deciders, fewer than the %d survivors", seed, a.Deciders, ranks-len(crashed))
		}
		if !slices.Equal(a.Value.Failed, crashed) {
			t.Logf("seed %d: agreed failed %v, crashed %v (a rank that crashed after the decision is not in it)", seed, a.Value.Failed, crashed)
		}
	}
}

// crashes is a plan of n crashes of ranks drawn from seed, at times
// within the first window, that crashes rank 0 (the first coordinator)
// in every fourth seed.
func crashes(seed uint64, ranks, n int, window time.Duration) Plan {
	var p Plan
	for k := range uint64(n) {
		victim := int((seed*7 + k*5) % uint64(ranks))
		if k == 0 && seed%4 == 0 {
			victim = 0
		}
		at := time.Duration(seed*3+k*11) % (window / time.Microsecond) * time.Microsecond
		p = append(p, Fault{Kind: Crash, Rank: victim, At: at})
	}
	return p
}

// TestAgreementCost: without failures, one round of about 5 messages per
// rank, at 1,000 ranks as at 10.
func TestAgreementCost(t *testing.T) {
	for _, ranks := range []int{10, 1000} {
		cfg := config(algorithms.AllReduce, ranks, 1, 1)
		cfg.Topology = DGXH100(ranks / 10)
		cfg.Iterations = 0
		cfg.Agree = true
		res := mustRun(t, cfg)
		if !res.OK() {
			t.Fatal(res.Violations)
		}
		if res.Agreement.Deciders != ranks || res.Agreement.Frames > int64(6*ranks) {
			t.Errorf("%d ranks: %d deciders, %d frames; want all, at most 6 per rank", ranks, res.Agreement.Deciders, res.Agreement.Frames)
		}
		t.Logf("%d ranks: %d frames, decided at %v", ranks, res.Agreement.Frames, res.SimTime)
	}
}

// TestTrainingGoesOnAfterShrink is ULFM's recovery end to end: ranks crash
// during an all-reduce (the first coordinator in every fourth seed), the
// survivors agree on who failed, shrink to a communicator of their own,
// and run 100 more all-reduces there, every one checked against the plain
// loop over the survivors' inputs.
func TestTrainingGoesOnAfterShrink(t *testing.T) {
	seeds := uint64(100)
	if testing.Short() {
		seeds = 20
	}
	clean := uint64(0)
	for seed := range seeds {
		ranks := 3 + int(seed%7)
		cfg := config(algorithms.AllReduce, ranks, 1+int(seed%3)*50, seed)
		cfg.Topology = DGXH100(1)
		cfg.Agree, cfg.AfterShrink = true, 100
		cfg.Faults = crashes(seed, ranks, 1+int(seed%3)%(ranks/2), 10*time.Microsecond)
		res := mustRun(t, cfg)
		if !res.OK() {
			t.Errorf("seed %d (%d ranks, %q): %v", seed, ranks, cfg.Faults, res.Violations)
			continue
		}
		var crashed []int
		for r, o := range res.Ranks {
			if o.Crashed {
				crashed = append(crashed, r)
			}
		}
		// The shrink agrees again on who failed: it leaves out every rank
		// the first agreement did, and may leave out one that crashed
		// since, but no other.
		a, failed := res.AfterShrink, res.Agreement.Value.Failed
		gone := len(failed)
		for _, r := range crashed {
			if !slices.Contains(failed, r) {
				gone++
			}
		}
		if a == nil || a.Size > ranks-len(failed) || a.Size < ranks-gone {
			t.Errorf("seed %d (%d ranks, %q): after the shrink %+v, agreed failed %v, crashed %v", seed, ranks, cfg.Faults, a, failed, crashed)
			continue
		}
		// A rank that crashed after the decision is in the shrunk
		// communicator, whose all-reduces then fail naming it: OK checked
		// that. Otherwise every one completes.
		if slices.Equal(failed, crashed) {
			clean++
			if a.Joined != a.Size || a.Completed != 100*a.Size {
				t.Errorf("seed %d (%d ranks, %q): after the shrink %+v", seed, ranks, cfg.Faults, a)
			}
		}
	}
	t.Logf("%d of %d seeds had every crash before the decision", clean, seeds)
	if clean < seeds*3/4 {
		t.Errorf("only %d of %d seeds had every crash before the decision", clean, seeds)
	}
}
