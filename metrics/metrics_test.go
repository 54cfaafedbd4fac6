package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/metrics"
	"github.com/gocomms/gocomms/store"
)

func TestKind(t *testing.T) {
	wrap := func(err error) error {
		return &commerr.OpError{Comm: "c", Op: "all_reduce", Err: fmt.Errorf("x: %w", err)}
	}
	for _, c := range []struct {
		err    error
		issued bool
		want   string
	}{
		{wrap(commerr.ErrTimeout), true, metrics.KindTimeout},
		{wrap(commerr.ErrPeerFailed), true, metrics.KindPeerFailed},
		{wrap(commerr.ErrAborted), true, metrics.KindAborted},
		{wrap(commerr.ErrRevoked), true, metrics.KindAborted},
		{wrap(commerr.ErrInvalidArgument), true, metrics.KindMismatch},
		{wrap(commerr.ErrInvalidArgument), false, metrics.KindInvalid},
		{wrap(commerr.ErrFinalized), false, metrics.KindInvalid},
		{wrap(context.Canceled), true, metrics.KindOther},
	} {
		if got := metrics.Kind(c.err, c.issued); got != c.want {
			t.Errorf("Kind(%v, %v) = %s, want %s", c.err, c.issued, got, c.want)
		}
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int]string{0: "<=1KiB", 1024: "<=1KiB", 1025: "<=64KiB", 1 << 20: "<=1MiB", 16 << 20: "<=16MiB", 16<<20 + 1: ">16MiB"} {
		if got := metrics.SizeClass(n); got != want {
			t.Errorf("SizeClass(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestSharedRegistry checks that a second New on a registry reuses the
// first one's vectors, so that both record into the same series.
func TestSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := metrics.New(reg, noLinks)
	if err != nil {
		t.Fatal(err)
	}
	b, err := metrics.New(reg, noLinks)
	if err != nil {
		t.Fatalf("second New: %v", err)
	}
	a.Comm("main", 0).Ended("all_reduce", 8, time.Millisecond, nil)
	b.Comm("main", 0).Ended("all_reduce", 8, time.Millisecond, nil)
	b.Comm("main", 1).Rejected("all_reduce", commerr.Invalid("bad"))
	want := `
# HELP gocomms_operations_total Operations that ended, failed ones included, per communicator and operation.
# TYPE gocomms_operations_total counter
gocomms_operations_total{comm="main",op="all_reduce",rank="0"} 2
gocomms_operations_total{comm="main",op="all_reduce",rank="1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gocomms_operations_total"); err != nil {
		t.Error(err)
	}
	if got := sum(t, reg, "gocomms_operation_errors_total"); got != 1 {
		t.Errorf("errors = %v, want 1", got)
	}
}

func TestPeerFailuresCountedOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, noLinks)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Comm("main", 0)
	for range 3 {
		c.Issued()
		c.Ended("all_reduce", 8, time.Millisecond, &commerr.OpError{Op: "all_reduce", Ranks: []int{2}, Err: commerr.ErrPeerFailed})
	}
	c.Issued()
	c.Ended("barrier", 0, time.Millisecond, &commerr.OpError{Op: "barrier", Ranks: []int{2, 3}, Err: commerr.ErrPeerFailed})
	if got := sum(t, reg, "gocomms_peer_failures_total"); got != 2 {
		t.Errorf("peer failures = %v, want 2 (ranks 2 and 3)", got)
	}
	if got := sum(t, reg, "gocomms_operations_in_flight"); got != 0 {
		t.Errorf("in flight = %v, want 0", got)
	}
}

func TestStoreRoundTrips(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, noLinks)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Store(store.NewMemory())
	if m.Store(s) != s {
		t.Error("wrapping a metered store again wrapped it twice")
	}
	ctx := context.Background()
	s.Set(ctx, "k", []byte("v"))
	s.Get(ctx, "k")
	s.Get(ctx, "k")
	s.Set(ctx, "", nil) // an empty key fails
	if got, err := testutil.GatherAndCount(reg, "gocomms_store_round_trip_seconds"); err != nil || got != 2 {
		t.Errorf("%d series of round trips (%v), want 2: get and set", got, err)
	}
	if got := sum(t, reg, "gocomms_store_round_trip_seconds"); got != 4 {
		t.Errorf("%v round trips, want 4", got)
	}
	if got := sum(t, reg, "gocomms_store_errors_total"); got != 1 {
		t.Errorf("store errors = %v, want 1", got)
	}
}

// sum gathers the family name from g and returns the sum of its
// counters' and gauges' values, or of its histograms' sample counts.
func sum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// noLinks is the link totals of a process that has none.
func noLinks() (reconnects, retransmitted uint64) { return 0, 0 }
