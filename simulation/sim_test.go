package simulation

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
)

var ops = []algorithms.Kind{
	algorithms.AllReduce, algorithms.Reduce, algorithms.Broadcast,
	algorithms.AllGather, algorithms.ReduceScatter, algorithms.Barrier,
}

func config(op algorithms.Kind, ranks, count int, seed uint64) Config {
	return Config{
		Ranks: ranks, Topology: DGXH100(1), Op: op, Count: count, DType: tensor.Int64,
		Root: ranks / 2, Iterations: 2, Timeout: 10 * time.Second, Limit: time.Minute, Seed: seed,
	}
}

func mustRun(t interface{ Fatal(...any) }, cfg Config) *Result {
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestResultsMatchPlainLoop runs every collective the simulator checks,
// on the real engine, over ranks and counts that include 1, non-powers of
// two, fewer elements than ranks and 0, and compares every rank's output
// with a plain loop over every rank's input.
func TestResultsMatchPlainLoop(t *testing.T) {
	for _, op := range ops {
		for _, ranks := range []int{1, 2, 3, 5, 8, 16} {
			for _, count := range []int{0, 1, ranks - 1, 1000} {
				for _, dt := range []tensor.DType{tensor.Int64, tensor.Float32} {
					cfg := config(op, ranks, count, uint64(ranks*1000+count))
					cfg.DType = dt
					cfg.ChunkBytes = 1 << 10 // several chunks at 1000 elements
					res := mustRun(t, cfg)
					if !res.OK() {
						t.Errorf("%v, %d ranks, %d %v: %v", op, ranks, count, dt, res.Violations)
					}
					for r, o := range res.Ranks {
						if o.Completed != cfg.Iterations {
							t.Errorf("%v, %d ranks, %d %v: rank %d completed %d of %d", op, ranks, count, dt, r, o.Completed, cfg.Iterations)
						}
					}
				}
			}
		}
	}
}

// TestSameSeedSameTrace: a run is a function of its configuration and
// seed, and the seed matters.
func TestSameSeedSameTrace(t *testing.T) {
	hashes := map[uint64]bool{}
	for seed := range uint64(10) {
		cfg := config(algorithms.AllReduce, 12, 5000, seed)
		cfg.Topology = DGXH100(3)
		cfg.Jitter = 3 * time.Microsecond
		cfg.ChunkBytes = 4 << 10
		a, b := mustRun(t, cfg), mustRun(t, cfg)
		if a.Hash != b.Hash || a.Events != b.Events || a.SimTime != b.SimTime {
			t.Fatalf("seed %d: two runs differ: hash %x/%x, events %d/%d, time %v/%v", seed, a.Hash, b.Hash, a.Events, b.Events, a.SimTime, b.SimTime)
		}
		if !a.OK() {
			t.Fatalf("seed %d: %v", seed, a.Violations)
		}
		hashes[a.Hash] = true
	}
	if len(hashes) < 9 {
		t.Errorf("10 seeds gave only %d distinct traces", len(hashes))
	}
}

// TestCrashIsNamed: a rank that crashes in the middle of a collective
// makes every other rank's pending operations fail promptly, naming it,
// and nothing hangs.
func TestCrashIsNamed(t *testing.T) {
	for _, op := range []algorithms.Kind{algorithms.AllReduce, algorithms.Broadcast, algorithms.AllGather} {
		for _, ranks := range []int{2, 5, 8} {
			cfg := config(op, ranks, 20000, 3)
			cfg.Topology = DGXH100(1)
			cfg.Iterations = 5
			cfg.ChunkBytes = 8 << 10
			clean := mustRun(t, cfg)
			crashed := ranks - 1
			cfg.Faults = Plan{{Kind: Crash, Rank: crashed, At: clean.SimTime / 3}}
			res := mustRun(t, cfg)
			if !res.OK() {
				t.Errorf("%v on %d ranks: %v", op, ranks, res.Violations)
				continue
			}
			for r, o := range res.Ranks {
				if r == crashed {
					if !o.Crashed {
						t.Errorf("%v on %d ranks: rank %d not marked crashed", op, ranks, r)
					}
					continue
				}
				var oe *commerr.OpError
				if o.Completed == cfg.Iterations {
					continue // finished before it needed the crashed rank
				}
				if !errors.As(o.Err, &oe) || !errors.Is(o.Err, commerr.ErrPeerFailed) || !slices.Contains(oe.Ranks, crashed) {
					t.Errorf("%v on %d ranks: rank %d failed with %v, want ErrPeerFailed naming rank %d", op, ranks, r, o.Err, crashed)
				}
			}
			if res.SimTime > clean.SimTime+time.Second {
				t.Errorf("%v on %d ranks: survivors took until %v to fail", op, ranks, res.SimTime)
			}
		}
	}
}

// TestPlanRoundTrip: a plan prints as it parses, so a run can be replayed
// from its printout; bad plans say what is wrong.
func TestPlanRoundTrip(t *testing.T) {
	p, err := ParsePlan("crash:rank=17,at=2ms; crash:rank=3,at=1µs")
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{{Kind: Crash, Rank: 17, At: 2 * time.Millisecond}, {Kind: Crash, Rank: 3, At: time.Microsecond}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed %v, want %v", p, want)
	}
	q, err := ParsePlan(p.String())
	if err != nil || !reflect.DeepEqual(q, p) {
		t.Fatalf("%q parsed back as %v, %v", p.String(), q, err)
	}
	for _, bad := range []string{"melt:rank=1,at=1ms", "crash:rank=1", "crash:rank=x,at=1ms", "crash:rank=1,at=1ms,color=red", "crash:rank"} {
		if _, err := ParsePlan(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestRingShiftMatchesPlainLoop runs a batch of one send and one receive
// per rank (PointToPoint) and checks that each rank got exactly the
// previous rank's input, including with a crash, which must fail the
// batches that need the crashed rank naming it.
func TestRingShiftMatchesPlainLoop(t *testing.T) {
	for _, ranks := range []int{2, 3, 5, 8, 16} {
		for _, count := range []int{0, 1, ranks - 1, 5000} {
			cfg := config(PointToPoint, ranks, count, uint64(ranks*1000+count))
			cfg.DType = tensor.Float32
			res := mustRun(t, cfg)
			if !res.OK() || res.Algorithm != "point_to_point" {
				t.Errorf("%d ranks, %d elements: %s %v", ranks, count, res.Algorithm, res.Violations)
			}
			for r, o := range res.Ranks {
				if o.Completed != cfg.Iterations {
					t.Errorf("%d ranks, %d elements: rank %d completed %d of %d", ranks, count, r, o.Completed, cfg.Iterations)
				}
			}
			cfg.Faults = Plan{{Kind: Crash, Rank: ranks - 1, At: time.Nanosecond}}
			if res := mustRun(t, cfg); !res.OK() {
				t.Errorf("%d ranks, %d elements, a crash: %v", ranks, count, res.Violations)
			}
		}
	}
	if err := (&Config{Ranks: 1, Op: PointToPoint}).validate(); err == nil {
		t.Error("a ring shift on 1 rank validated")
	}
}

// TestInvariantsHold is the property: over random sizes, collectives,
// counts, topologies, jitter, seeds and crashes, every run keeps the
// invariants, and replays to the same trace.
func TestInvariantsHold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 4).Draw(t, "nodes")
		perNode := rapid.IntRange(1, 6).Draw(t, "ranksPerNode")
		ranks := nodes * perNode
		op := rapid.SampledFrom(ops).Draw(t, "op")
		cfg := config(op, ranks, rapid.IntRange(0, 3000).Draw(t, "count"), rapid.Uint64().Draw(t, "seed"))
		cfg.Topology = RailCluster(nodes)
		cfg.Root = rapid.IntRange(0, ranks-1).Draw(t, "root")
		cfg.Iterations = rapid.IntRange(1, 3).Draw(t, "iterations")
		cfg.ChunkBytes = rapid.SampledFrom([]int{0, 1 << 10, 8 << 10}).Draw(t, "chunk")
		cfg.Algorithm = rapid.SampledFrom(append([]string{""}, algorithms.NewRegistry().Algorithms(op)...)).Draw(t, "algorithm")
		cfg.Jitter = time.Duration(rapid.IntRange(0, 5000).Draw(t, "jitterNs"))
		if ranks > 1 && rapid.Bool().Draw(t, "crash") {
			cfg.Faults = Plan{{Kind: Crash, Rank: rapid.IntRange(0, ranks-1).Draw(t, "crashRank"),
				At: time.Duration(rapid.IntRange(0, 50_000).Draw(t, "crashNs"))}}
		}
		a := mustRun(t, cfg)
		if !a.OK() {
			t.Fatalf("%s", describe(cfg, a))
		}
		if b := mustRun(t, cfg); b.Hash != a.Hash {
			t.Fatalf("replay differs: %x then %x", a.Hash, b.Hash)
		}
	})
}

func describe(cfg Config, r *Result) string {
	return fmt.Sprintf("%d ranks on %d nodes, %v of %d, algorithm %q, seed %d, faults %q: %v", cfg.Ranks, cfg.Topology.Nodes, cfg.Op, cfg.Count, cfg.Algorithm, cfg.Seed, cfg.Faults, r.Violations)
}
