package gocomms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// syncBuffer is a bytes.Buffer that the ranks' goroutines may write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) records(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var recs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestPeerFailureLoggedAsWarning has one of three ranks crash while the
// others all-reduce: each survivor logs the failure as a warning, without
// debug on, and the record names the communicator, the rank that logs and
// the size, once each, as every record of a communicator does.
func TestPeerFailureLoggedAsWarning(t *testing.T) {
	const n, dead = 3, 1
	var out syncBuffer
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gate := newStartGate(n - 1)
	local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == dead {
			gate.wait(ctx) // the others wait in the all-reduce
			c.Abort(errors.New("simulated crash"))
			return nil
		}
		gate.arm(c, gocomms.OpAllReduce)
		err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
		if e := wantErr(err, gocomms.ErrPeerFailed, "all_reduce with a rank gone"); e != nil {
			return e
		}
		return finalizeExpectingFailures(ctx, c)
	}, gocomms.WithLogger(logger))

	warned := map[float64]bool{}
	for _, r := range out.records(t) {
		if r["msg"] != "peer failed" {
			continue
		}
		if r["level"] != "WARN" || r["comm"] != "local" || r["size"] != float64(n) || r["peer"] != float64(dead) {
			t.Errorf("record %v: want level WARN, comm local, size %d, peer %d", r, n, dead)
		}
		warned[r["rank"].(float64)] = true
	}
	for r := range n {
		if r != dead && !warned[float64(r)] {
			t.Errorf("rank %d logged no warning of rank %d's failure; log:\n%s", r, dead, fmt.Sprint(out.records(t)))
		}
	}
}
