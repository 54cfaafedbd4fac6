package gocomms_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/tcp/tcpproxy"
)

// TestAllReduceSurvivesConnectionResets runs all-reduces over real TCP
// through proxies that abort every connection, mid-transfer, a few times
// during the run: links reconnect, send again what the peer did not
// acknowledge, and every result is the plain loop's, none lost and none
// applied twice.
func TestAllReduceSurvivesConnectionResets(t *testing.T) {
	const ranks, iters, count = 4, 30, 1 << 18 // 1 MiB of float32: payloads are lent
	reg := prometheus.NewRegistry()
	before := counterValue(t, reg, "gocomms_link_reconnects_total")
	nw := tcpproxy.New(tcp.New())
	var progress, reset atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// Abort everything each time rank 0 reaches a few more
		// iterations: at most 4 times, inside the links' restart budget.
		for next := int64(3); next < iters && reset.Load() < 4; next += 6 {
			for progress.Load() < next {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
			if nw.Reset() > 0 {
				reset.Add(1)
			}
		}
	}()
	local(t, ranks, func(ctx context.Context, c *gocomms.Comm) error {
		x := make([]float32, count)
		for it := range iters {
			for i := range x {
				x[i] = float32((c.Rank()+1)*(it+1)) + float32(i%7)
			}
			if err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
				return fmt.Errorf("iteration %d: %w", it, err)
			}
			for i, got := range x {
				// sum over r of (r+1)(it+1) + i%7
				want := float32(ranks*(ranks+1)/2*(it+1)) + float32(ranks*(i%7))
				if got != want {
					return fmt.Errorf("iteration %d: element %d = %v, want %v", it, i, got, want)
				}
			}
			if c.Rank() == 0 {
				progress.Store(int64(it + 1))
			}
		}
		return c.Finalize(ctx)
	}, gocomms.WithNetwork(nw), gocomms.WithMetrics(reg))
	if reset.Load() == 0 {
		t.Fatal("no connection was reset while the all-reduces ran")
	}
	if after := counterValue(t, reg, "gocomms_link_reconnects_total"); after <= before {
		t.Errorf("gocomms_link_reconnects_total went from %v to %v across %d resets", before, after, reset.Load())
	}
	t.Logf("connections reset %d times", reset.Load())
}

// counterValue gathers reg and returns the counter name's value, 0 where
// reg has none yet.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
