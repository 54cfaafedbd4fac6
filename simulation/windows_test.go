package simulation

import (
	"fmt"
	"testing"

	"github.com/gocomms/gocomms/algorithms"
)

// TestWindowsThroughTheAPI runs the one-sided phase (Config.Windows)
// after all-reduces and alone, at 1 to 9 ranks: every rank's window holds
// its predecessor's value once its signal came, and a seed replays to the
// same trace.
func TestWindowsThroughTheAPI(t *testing.T) {
	for _, ranks := range []int{1, 2, 3, 5, 8, 9} {
		for _, iters := range []int{0, 2} {
			t.Run(fmt.Sprintf("ranks=%d/iters=%d", ranks, iters), func(t *testing.T) {
				cfg := config(algorithms.AllReduce, ranks, 3, 11)
				cfg.Iterations, cfg.Windows = iters, true
				res := mustRun(t, cfg)
				if !res.OK() || res.Windows != ranks {
					t.Fatalf("%d of %d ranks exchanged through their windows; violations: %q", res.Windows, ranks, res.Violations)
				}
				if again := mustRun(t, cfg); again.Hash != res.Hash {
					t.Fatalf("seed %d: trace %x, then %x", cfg.Seed, res.Hash, again.Hash)
				}
			})
		}
	}
}

// TestWindowsUnderACrash: a rank that crashes before the one-sided phase
// leaves every other rank's window creation, which is collective, failed
// with an error naming it (the run's invariants check the naming).
func TestWindowsUnderACrash(t *testing.T) {
	cfg := config(algorithms.AllReduce, 6, 3, 5)
	cfg.Iterations, cfg.Windows = 0, true
	plan, err := ParsePlan("crash:rank=2,at=0s")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = plan
	res := mustRun(t, cfg)
	if !res.OK() {
		t.Fatalf("violations: %q", res.Violations)
	}
	if res.Windows != 0 {
		t.Fatalf("%d survivors made a window without rank 2", res.Windows)
	}
}
