package simulation

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gocomms/gocomms/algorithms"
)

// TestChromeTrace: the trace is valid JSON in the Chrome trace format, with
// one operation span per rank and iteration, one span per frame the
// network carried, and the faults as instants; and writing it changes
// nothing about the run.
func TestChromeTrace(t *testing.T) {
	cfg := config(algorithms.AllReduce, 6, 3000, 5)
	cfg.Topology = DGXH100(2)
	cfg.ChunkBytes = 4 << 10
	cfg.Faults, _ = ParsePlan("delay:rank=2,at=0s,for=1s,by=3µs")
	plain := mustRun(t, cfg)
	var buf bytes.Buffer
	cfg.Trace = &buf
	traced := mustRun(t, cfg)
	if traced.Hash != plain.Hash {
		t.Fatalf("tracing changed the run: hash %x, %x without", traced.Hash, plain.Hash)
	}
	var doc struct {
		TraceEvents []chromeEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	count := map[string]int{}
	end := micros(traced.SimTime)
	for _, e := range doc.TraceEvents {
		count[e.Cat+"/"+e.Ph]++
		if e.Ts < 0 || e.Dur < 0 || e.Ts+e.Dur > end+1e-9 {
			t.Errorf("event %+v lies outside [0, %v µs]", e, end)
		}
	}
	want := map[string]int{
		"op/X":    cfg.Ranks * cfg.Iterations,
		"frame/X": int(traced.Frames),
		"fault/i": 1,
		"/M":      3 * cfg.Ranks,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%d %s events, want %d (all: %v)", count[k], k, n, count)
		}
	}
}

func TestChromeTraceWriteError(t *testing.T) {
	cfg := config(algorithms.Barrier, 3, 0, 1)
	cfg.Trace = failingWriter{}
	if _, err := Run(cfg); err == nil {
		t.Fatal("a trace that cannot be written is not an error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }
