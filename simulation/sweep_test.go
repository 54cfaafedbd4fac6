package simulation

import (
	"runtime"
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// sweepConfig is seed's run in the sweep: the collective, size, shape and
// faults all follow from the seed.
func sweepConfig(seed uint64) Config {
	op := ops[seed%uint64(len(ops))]
	nodes := 1 + int(seed/7%3)
	ranks := nodes * (1 + int(seed/3%5))
	cfg := config(op, ranks, int(seed*37%2500), seed)
	cfg.Topology = DGXH100(nodes)
	cfg.DType = []tensor.DType{tensor.Int64, tensor.Float32, tensor.Float64}[seed/11%3]
	cfg.Root = int(seed % uint64(ranks))
	cfg.ChunkBytes = []int{0, 1 << 10, 4 << 10}[seed/13%3]
	if algos := algorithms.NewRegistry().Algorithms(op); len(algos) > 1 {
		cfg.Algorithm = algos[seed/17%uint64(len(algos))]
	}
	cfg.Timeout = time.Second
	cfg.Limit = 10 * time.Second
	cfg.Faults = RandomPlan(seed, ranks, 1+int(seed%3), 200*time.Microsecond, nil)
	return cfg
}

// TestSeedSweep runs 1,000 seeds (100 with -short), each twice: every run
// keeps the invariants under the faults its seed draws, and replays to the
// same trace.
func TestSeedSweep(t *testing.T) {
	seeds := uint64(1000)
	if testing.Short() {
		seeds = 100
	}
	for seed := range seeds {
		cfg := sweepConfig(seed)
		a, b := mustRun(t, cfg), mustRun(t, cfg)
		if !a.OK() {
			t.Errorf("seed %d: %s", seed, describe(cfg, a))
		}
		if a.Hash != b.Hash || a.Events != b.Events {
			t.Errorf("seed %d: replay differs: hash %x then %x, %d then %d events", seed, a.Hash, b.Hash, a.Events, b.Events)
		}
	}
}

// TestSameTraceAnyGOMAXPROCS: the loop runs every actor on one goroutine,
// so the number of threads the Go runtime may use changes nothing.
func TestSameTraceAnyGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for seed := range uint64(5) {
		cfg := sweepConfig(seed*101 + 3)
		var hashes []uint64
		for _, procs := range []int{1, 2, 4} {
			runtime.GOMAXPROCS(procs)
			hashes = append(hashes, mustRun(t, cfg).Hash)
		}
		if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
			t.Errorf("seed %d: hashes %x at GOMAXPROCS 1, 2 and 4", seed, hashes)
		}
	}
}
