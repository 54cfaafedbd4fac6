package simulation

import (
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
)

// BenchmarkAllReduce4096 simulates one 16 KiB all-reduce over 4,096 ranks
// on 512 DGX-like nodes, data carried and checked, and reports the
// simulated frames per second of wall time.
func BenchmarkAllReduce4096(b *testing.B) {
	var frames int64
	start := time.Now()
	for b.Loop() {
		cfg := config(algorithms.AllReduce, 4096, 2048, 1)
		cfg.Topology = DGXH100(512)
		cfg.Iterations = 1
		frames += mustRun(b, cfg).Frames
	}
	b.ReportMetric(float64(frames)/time.Since(start).Seconds(), "frames/s")
}
