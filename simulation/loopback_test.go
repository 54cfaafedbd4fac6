package simulation

import (
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

func TestLoopbackValidates(t *testing.T) {
	for _, ranks := range []int{1, 2, 3, 4, 8, 64} {
		topo := Loopback(ranks)
		if err := topo.validate(ranks); err != nil {
			t.Errorf("Loopback(%d): %v", ranks, err)
		}
		if topo.Nodes != 1 {
			t.Errorf("Loopback(%d): %d nodes, want every rank on one", ranks, topo.Nodes)
		}
	}
	// Up to one rank per CPU nothing is shared; beyond, bandwidth is split.
	if Loopback(1) != Loopback(2) {
		t.Errorf("Loopback(1) = %+v differs from Loopback(2) = %+v", Loopback(1), Loopback(2))
	}
	if two, four := Loopback(2).Intra.Bandwidth, Loopback(4).Intra.Bandwidth; four != two/2 {
		t.Errorf("bandwidth at 4 ranks %g B/s, want half of 2 ranks' %g", four, two)
	}
}

// TestLoopbackAllReduceTime: on 2 ranks a simulated all-reduce of S bytes
// takes a hop's latency and overhead plus S over the bandwidth. Recursive
// doubling (up to 64 KiB) is one exchange, so that is exact; the ring's
// second hop shows at 1 MiB, and from 2 MiB its pipeline of chunks hides it.
func TestLoopbackAllReduceTime(t *testing.T) {
	topo := Loopback(2)
	hop := topo.Overhead + topo.Intra.Latency
	cases := []struct {
		bytes int
		algo  string
		hops  float64 // hops the time is allowed beyond the one every size pays
	}{
		{8, "recursive_doubling", 0},
		{4 << 10, "recursive_doubling", 0},
		{64 << 10, "recursive_doubling", 0},
		{1 << 20, "ring", 1},
		{4 << 20, "ring", 0},
	}
	var last time.Duration
	for _, c := range cases {
		cfg := Config{
			Ranks: 2, Topology: topo, Op: algorithms.AllReduce, Count: c.bytes / 4, DType: tensor.Float32,
			Iterations: 1, Timeout: 10 * time.Second, Limit: time.Minute, Seed: 1,
		}
		res := mustRun(t, cfg)
		if !res.OK() {
			t.Fatalf("%d B: %v", c.bytes, res.Violations)
		}
		if res.Algorithm != c.algo {
			t.Errorf("%d B: algorithm %s, want %s", c.bytes, res.Algorithm, c.algo)
		}
		want := hop + time.Duration(float64(c.bytes)/topo.Intra.Bandwidth*float64(time.Second))
		slack := time.Duration(c.hops*float64(hop)) + want/100
		if got := res.SimTime; got < want-want/100 || got > want+slack {
			t.Errorf("%d B: simulated %v, want %v to %v (latency + overhead + size/bandwidth)", c.bytes, got, want, want+slack)
		}
		if res.SimTime <= last {
			t.Errorf("%d B: simulated %v, no more than the smaller size's %v", c.bytes, res.SimTime, last)
		}
		last = res.SimTime
	}
}
