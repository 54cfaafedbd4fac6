package simulation

import (
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// survivable are the kinds the engine rides out: the harmless ones, and
// connection resets shorter than the links' restart budget (the sweep's
// windows last at most a millisecond).
var survivable = []FaultKind{Drop, Flap, Partition, Corrupt, Loss, Duplicate, Delay, Jitter, Slow}

// TestLinkFaultSweep runs 400 seeds (100 with -short) of collectives
// under drops, flaps, partitions and corruption, among harmless faults:
// links reconnect and send again what was not acknowledged, so every
// operation completes with the plain loop's result, which shows that no
// frame was lost (an operation would wait for it) or applied twice (the
// schedule rejects a duplicate).
func TestLinkFaultSweep(t *testing.T) {
	seeds := uint64(400)
	if testing.Short() {
		seeds = 100
	}
	kinds := []algorithms.Kind{algorithms.AllReduce, algorithms.AllGather, algorithms.ReduceScatter, algorithms.Broadcast, PointToPoint}
	var redials int64
	for seed := range seeds {
		nodes := 1 + int(seed/5%3)
		ranks := max(2, nodes*(1+int(seed/3%4)))
		count := []int{0, 1, ranks - 1, 3000, 20000}[seed/7%5]
		cfg := config(kinds[seed%uint64(len(kinds))], ranks, count, seed)
		cfg.Topology = DGXH100(nodes)
		cfg.DType = []tensor.DType{tensor.Int64, tensor.Float32}[seed/11%2]
		cfg.ChunkBytes = []int{0, 4 << 10}[seed/13%2]
		cfg.Iterations = 3
		// Faults start while the operations run, and last up to as long.
		within := max(mustRun(t, cfg).SimTime, time.Microsecond)
		cfg.Faults = RandomPlan(seed, ranks, 1+int(seed%2), within, survivable)
		cfg.Survive = true
		res := mustRun(t, cfg)
		redials += res.Redials
		if !res.OK() {
			t.Errorf("seed %d: %s", seed, describe(cfg, res))
			continue
		}
		for r, o := range res.Ranks {
			if o.Completed != cfg.Iterations {
				t.Errorf("seed %d: rank %d completed %d of %d under %q", seed, r, o.Completed, cfg.Iterations, cfg.Faults)
			}
		}
	}
	if redials < int64(seeds)/4 {
		t.Errorf("%d seeds reconnected %d times: the faults missed the operations", seeds, redials)
	}
	t.Logf("%d seeds, %d reconnections", seeds, redials)
}
