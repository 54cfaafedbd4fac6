package simulation

import (
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// TestEstimateShape: the footprint counts the schedule every rank runs
// (its peers and steps, as the schedule itself has them), real data's
// buffers, and grows with the ranks; MostRanks finds the largest count of
// whole nodes whose estimate fits.
func TestEstimateShape(t *testing.T) {
	cfg := config(algorithms.AllReduce, 64, 1<<10, 1)
	cfg.Topology, cfg.DType, cfg.Algorithm = DGXH100(8), tensor.Float32, "ring"
	f, err := cfg.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	d := dataset{cfg: &cfg, elem: 4}
	ring, err := algorithms.Build(d.spec(5))
	if err != nil {
		t.Fatal(err)
	}
	if f.Algorithm != "ring" || f.Links != 2 || f.Steps != float64(len(ring.Steps)) || f.Data != cfg.DataBytes() {
		t.Errorf("ring of 64 ranks: %+v; want 2 links, %d steps, %d bytes of data", f, len(ring.Steps), cfg.DataBytes())
	}
	cfg.Phantom = true
	phantom, err := cfg.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	if phantom.Data != 0 || phantom.Bytes != f.Bytes-f.Data {
		t.Errorf("phantom data: %+v, real: %+v", phantom, f)
	}

	cfg.Algorithm = "rabenseifner"
	var last int64
	for _, ranks := range []int{8, 64, 1024, 16384} {
		cfg.Ranks, cfg.Topology = ranks, DGXH100(ranks/8)
		f, err := cfg.Estimate()
		if err != nil {
			t.Fatal(err)
		}
		if f.Bytes <= last || f.Links < 1 || f.Steps < f.Links {
			t.Errorf("%d ranks: %+v after %d bytes", ranks, f, last)
		}
		last = f.Bytes
	}
	most, err := cfg.MostRanks(last / 3)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ranks int) int64 {
		s := cfg
		s.Ranks, s.Topology = ranks, DGXH100(ranks/8)
		f, err := s.Estimate()
		if err != nil {
			t.Fatal(err)
		}
		return f.Bytes
	}
	if most%8 != 0 || most <= 0 || at(most) > last/3 || at(most+8) <= last/3 {
		t.Errorf("MostRanks(%d) = %d: %d bytes there, %d with a node more", last/3, most, at(most), at(most+8))
	}
	if n, _ := cfg.MostRanks(1); n != 0 {
		t.Errorf("MostRanks(1 byte) = %d", n)
	}

	// An agreement alone runs no schedule: a link to its coordinator, and
	// the coordinator's to every rank; a shrink after it runs the
	// all-reduces on a second communicator.
	cfg.Iterations, cfg.Agree = 0, true
	agree, err := cfg.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	if agree.Steps != 0 || agree.Links != 2 || agree.Algorithm != "none" {
		t.Errorf("an agreement alone: %+v", agree)
	}
	cfg.AfterShrink = 1
	shrink, err := cfg.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	if shrink.Steps == 0 || shrink.Links <= agree.Links || shrink.Bytes <= agree.Bytes {
		t.Errorf("a shrink after the agreement: %+v, the agreement alone %+v", shrink, agree)
	}
}

// TestEstimateEveryOp: every collective the simulator runs has an
// estimate (a broadcast's in-place layout is no planner's spec), and one
// it does not run is refused with its name.
func TestEstimateEveryOp(t *testing.T) {
	for _, op := range append(slices.Clone(ops), PointToPoint) {
		cfg := config(op, 7, 100, 1)
		if f, err := cfg.Estimate(); err != nil || f.Bytes <= 0 {
			t.Errorf("%v: %+v, %v", op, f, err)
		}
	}
	for _, op := range []algorithms.Kind{algorithms.Gather, algorithms.Scatter, algorithms.AllToAll} {
		cfg := config(op, 7, 100, 1)
		if _, err := cfg.Estimate(); err == nil || !strings.Contains(err.Error(), op.String()) {
			t.Errorf("%v: %v", op, err)
		}
	}
}

// TestEstimateReleasedLinks: ranks that release their links hold about
// three at once, whatever their schedule's peers, and none more than it
// has; the rest of the footprint stays.
func TestEstimateReleasedLinks(t *testing.T) {
	for _, tc := range []struct {
		algo string
		want float64
	}{{"recursive_doubling", releasedLinks}, {"ring", 2}} {
		cfg := config(algorithms.AllReduce, 100000, 1<<18, 1)
		cfg.Topology, cfg.Algorithm, cfg.Phantom = DGXH100(12500), tc.algo, true
		kept, err := cfg.Estimate()
		if err != nil {
			t.Fatal(err)
		}
		cfg.ReleaseLinks = true
		released, err := cfg.Estimate()
		if err != nil {
			t.Fatal(err)
		}
		if released.Links != tc.want || released.Steps != kept.Steps || released.Bytes > kept.Bytes {
			t.Errorf("%s: kept %+v, released %+v", tc.algo, kept, released)
		}
	}
}
