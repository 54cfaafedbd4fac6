package simulation

import (
	"math"
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// TestPresetFits: the embedded fits parse and validate, and make a valid
// one-node topology at every rank count, the same up to one rank per
// CPU; past that, the hop and the bandwidth follow the fit's exponents of
// the ranks each CPU carries, and the hop adds a wake-up that grows with
// the other ranks on a CPU.
func TestPresetFits(t *testing.T) {
	for name, fit := range HostFits() {
		if err := fit.Validate(); err != nil || fit.Name != name {
			t.Errorf("preset %s: %v, named %q", name, err, fit.Name)
		}
		for _, ranks := range []int{1, 2, 3, 4, 8, 64} {
			topo := fit.Topology(ranks)
			if err := topo.validate(ranks); err != nil || topo.Nodes != 1 {
				t.Errorf("%s(%d): %v, %d nodes", name, ranks, err, topo.Nodes)
			}
		}
		if fit.Topology(1) != fit.Topology(fit.Cores) {
			t.Errorf("%s: %+v at one rank, %+v at %d", name, fit.Topology(1), fit.Topology(fit.Cores), fit.Cores)
		}
		one, four := fit.Topology(fit.Cores), fit.Topology(4*fit.Cores)
		hop := func(t Topology) float64 { return float64(t.Overhead+t.Intra.Latency) / float64(time.Microsecond) }
		if got, want := hop(four), fit.HopUS*math.Pow(4, fit.HopExponent)+fit.WakeUS*math.Pow(3, fit.HopExponent); math.Abs(got-want) > 1e-3*want {
			t.Errorf("%s: a hop at %d ranks takes %.3f µs, want %.3f·4^%.3f + %.3f·3^%[5].3f = %[7].3f", name, 4*fit.Cores, got, fit.HopUS, fit.HopExponent, fit.WakeUS, want)
		}
		if got, want := one.Intra.Bandwidth/four.Intra.Bandwidth, math.Pow(4, fit.BandwidthExponent); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: the bandwidth falls %.4f times, want %.4f", name, got, want)
		}
	}
	if _, err := parseHostFit([]byte(`{"name": "x", "cores": 0}`)); err == nil {
		t.Error("a fit of no cores parsed")
	}
	bad := loopbackFit
	bad.WakeUS = -1
	if bad.Validate() == nil {
		t.Error("a fit with a negative wake-up validated")
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
