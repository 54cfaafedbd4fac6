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

// BenchmarkAllReducePhantom16384 simulates one 1 MiB all-reduce over
// 16,384 ranks on 2,048 DGX-like nodes with phantom data, the shape of the
// 100,000-rank run at a size a profile can take, and reports simulated
// frames and events per second of wall time.
func BenchmarkAllReducePhantom16384(b *testing.B) {
	var frames, events int64
	start := time.Now()
	for b.Loop() {
		cfg := config(algorithms.AllReduce, 16384, 1<<17, 1)
		cfg.Topology = DGXH100(2048)
		cfg.Iterations = 1
		cfg.Phantom = true
		res := mustRun(b, cfg)
		frames += res.Frames
		events += res.Events
	}
	b.ReportMetric(float64(frames)/time.Since(start).Seconds(), "frames/s")
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}
