package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gocomms/gocomms/simulation"
)

// TestFitRecoversATopology: times simulated with the shm preset, fitted
// from the loopback one, a hundredfold off in places, come back within a
// few percent.
func TestFitRecoversATopology(t *testing.T) {
	truth := simulation.HostFits()["shm"]
	var points []point
	for _, ranks := range []int{2, 4, 8} {
		for _, bytes := range []int{8, 4 << 10, 256 << 10, 4 << 20} {
			us, err := simulate(truth, ranks, bytes)
			if err != nil {
				t.Fatal(err)
			}
			points = append(points, point{ranks, bytes, us})
		}
	}
	start := simulation.HostFits()["loopback"]
	start.Cores = truth.Cores
	got, cost := fit(start, points)
	for ranks, e := range got.Error {
		if e > 3 {
			t.Errorf("%s ranks: the fit misses the times it was fitted to by %.1f%% (cost %.4f): %+v", ranks, e, cost, got)
		}
	}
}

// TestReadPoints takes what calibrate.sh writes and refuses the rest.
func TestReadPoints(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tsv")
	if err := os.WriteFile(good, []byte("2\t8\t4.8\t4.4\t10.3\n4\t1048576\t2610.4\t2000\t3000\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := readPoints(good)
	if err != nil || len(ps) != 2 || ps[1] != (point{4, 1 << 20, 2610.4}) {
		t.Errorf("readPoints: %v, %v", ps, err)
	}
	for _, bad := range []string{"1\t8\t4.8\n", "2\t8\t-1\n", "two\t8\t4\n", ""} {
		path := filepath.Join(dir, "bad.tsv")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readPoints(path); err == nil {
			t.Errorf("readPoints of %q: no error", bad)
		}
	}
}
