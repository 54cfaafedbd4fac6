package gocomms_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/metrics"
)

// series gathers the family name from g, its samples keyed by their
// labels as `k=v,...` in name order: the counter's or gauge's value, or
// the histogram's count.
func series(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			out[labelKey(m)] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

func labelKey(m *dto.Metric) string {
	var kv []string
	for _, l := range m.GetLabel() {
		kv = append(kv, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(kv, ",")
}

// TestMetricsCountOperations runs completed, rejected, mismatched and
// timed-out operations on two ranks and checks what the registry says of
// each: counts, bytes (as the flight record counts them), latency samples
// in the size class of those bytes, and errors by kind.
func TestMetricsCountOperations(t *testing.T) {
	reg := prometheus.NewRegistry()
	flight := make([][]gocomms.FlightEntry, 2)
	timedOut := make(chan struct{})
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		data := gocomms.FromSlice(make([]float32, 256))
		for range 3 {
			if err := c.AllReduce(ctx, data, gocomms.Sum); err != nil {
				return err
			}
		}
		if err := c.Broadcast(ctx, gocomms.FromSlice(make([]int64, 10)), 0); err != nil {
			return err
		}
		if err := wantErr(c.AllReduce(ctx, nil, gocomms.Sum), gocomms.ErrInvalidArgument, "all_reduce of nil"); err != nil {
			return err
		}
		// Rank 1 calls with another dtype: both ranks fail, after issue.
		var mismatched *gocomms.Tensor = gocomms.FromSlice(make([]float32, 4))
		if c.Rank() == 1 {
			mismatched = gocomms.FromSlice(make([]int32, 4))
		}
		if err := wantErr(c.AllReduce(ctx, mismatched, gocomms.Sum), gocomms.ErrInvalidArgument, "mismatched all_reduce"); err != nil {
			return err
		}
		if c.Rank() == 0 { // alone: it times out
			err := c.AllReduce(ctx, data, gocomms.Sum, gocomms.OpTimeout(100*time.Millisecond))
			close(timedOut)
			if err := wantErr(err, gocomms.ErrTimeout, "all_reduce without rank 1"); err != nil {
				return err
			}
		}
		<-timedOut
		flight[c.Rank()] = c.FlightRecord()
		return finalizeExpectingFailures(ctx, c)
	}, gocomms.WithMetrics(reg))

	ops := series(t, reg, "gocomms_operations_total")
	errs := series(t, reg, "gocomms_operation_errors_total")
	bytes := series(t, reg, "gocomms_operation_bytes_total")
	latency := series(t, reg, "gocomms_operation_duration_seconds")
	for rank, want := range map[int]struct{ allReduce, timeouts float64 }{0: {6, 1}, 1: {5, 0}} {
		l := fmt.Sprintf("comm=local,op=%%s,rank=%d", rank)
		if got := ops[fmt.Sprintf(l, "all_reduce")]; got != want.allReduce {
			t.Errorf("rank %d: %v all_reduce operations, want %v (3 done, 1 rejected, 1 mismatched, %v timed out)", rank, got, want.allReduce, want.timeouts)
		}
		if got := ops[fmt.Sprintf(l, "broadcast")]; got != 1 {
			t.Errorf("rank %d: %v broadcasts, want 1", rank, got)
		}
		for kind, n := range map[string]float64{"invalid": 1, "mismatch": 1, "timeout": want.timeouts} {
			if got := errs[strings.Replace(fmt.Sprintf(l, "all_reduce"), ",op=", ",kind="+kind+",op=", 1)]; got != n {
				t.Errorf("rank %d: %v all_reduce errors of kind %s, want %v", rank, got, kind, n)
			}
		}
		moved := 0
		for _, e := range flight[rank] {
			if e.Op == "all_reduce" && e.State == gocomms.FlightCompleted {
				moved += e.InputBytes + e.OutputBytes
			}
		}
		if got := bytes[fmt.Sprintf(l, "all_reduce")]; got != float64(moved) || moved == 0 {
			t.Errorf("rank %d: %v bytes of all_reduce, want %d as the flight record counts them", rank, got, moved)
		}
		class := fmt.Sprintf(l, "all_reduce") + ",size=" + metrics.SizeClass(moved/3)
		if got := latency[class]; got != 3 {
			t.Errorf("rank %d: %v latency samples of %s, want 3: %v", rank, got, class, latency)
		}
	}
	for k, v := range series(t, reg, "gocomms_operations_in_flight") {
		if v != 0 {
			t.Errorf("%s: %v operations in flight after finalize", k, v)
		}
	}
}

// TestMetricsCountPeerFailures has a rank crash while the others wait for
// it: their errors count as peer_failed, and the crashed rank once.
func TestMetricsCountPeerFailures(t *testing.T) {
	reg := prometheus.NewRegistry()
	const n, dead = 5, 2
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
		err = c.Barrier(ctx)
		if e := wantErr(err, gocomms.ErrPeerFailed, "barrier after a rank went"); e != nil {
			return e
		}
		return finalizeExpectingFailures(ctx, c)
	}, gocomms.WithMetrics(reg))
	failures := series(t, reg, "gocomms_peer_failures_total")
	errs := series(t, reg, "gocomms_operation_errors_total")
	for r := range n {
		if r == dead {
			continue
		}
		if got := failures[fmt.Sprintf("comm=local,rank=%d", r)]; got != 1 {
			t.Errorf("rank %d counted %v peer failures, want 1: %v", r, got, failures)
		}
		if got := errs[fmt.Sprintf("comm=local,kind=peer_failed,op=all_reduce,rank=%d", r)]; got != 1 {
			t.Errorf("rank %d: %v all_reduce errors of kind peer_failed, want 1: %v", r, got, errs)
		}
	}
}

// TestWithoutMetricsNothingRecords checks that WithMetrics is the switch:
// a registry no communicator was given stays empty.
func TestWithoutMetricsNothingRecords(t *testing.T) {
	reg := prometheus.NewRegistry()
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		h := httptest.NewRecorder()
		gocomms.Handler(c).ServeHTTP(h, httptest.NewRequest("GET", "/metrics", nil))
		if h.Code != http.StatusNotFound {
			return fmt.Errorf("/metrics without metrics: %d, want 404", h.Code)
		}
		return c.Barrier(ctx)
	})
	if fams, _ := reg.Gather(); len(fams) != 0 {
		t.Errorf("%d families gathered from a registry nobody was given", len(fams))
	}
}

// get returns the status and body of a GET of url; 0 and the error if
// it failed.
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// TestHandler serves rank 0 of two while rank 1 keeps away from an
// all-reduce: /readyz turns 503 naming it once it has been in flight past
// the threshold, and 200 again once rank 1 joins; the other endpoints
// serve their content.
func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	seen := make(chan struct{})
	var srv *httptest.Server
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			<-seen
			return c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum)
		}
		srv = httptest.NewServer(gocomms.Handler(c, gocomms.StuckAfter(50*time.Millisecond)))
		if code, body := get(srv.URL + "/readyz"); code != http.StatusOK {
			close(seen)
			return fmt.Errorf("/readyz before any operation: %d %s", code, body)
		}
		w := c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum)
		var code int
		var body string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if code, body = get(srv.URL + "/readyz"); code != http.StatusOK {
				break
			}
		}
		close(seen)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "all_reduce #0") || !strings.Contains(body, "in flight for") {
			return fmt.Errorf("/readyz with an all_reduce stuck: %d %q, want 503 naming all_reduce #0", code, body)
		}
		if err := w.Wait(ctx); err != nil {
			return err
		}
		if code, body := get(srv.URL + "/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz once the all_reduce completed: %d %s", code, body)
		}
		return nil
	}, gocomms.WithMetrics(reg))
	defer srv.Close()

	if code, body := get(srv.URL + "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "finalized") {
		t.Errorf("/readyz after finalize: %d %q, want 503 saying finalized", code, body)
	}
	if code, _ := get(srv.URL + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get(srv.URL + "/metrics"); code != http.StatusOK || !strings.Contains(body, `gocomms_operations_total{comm="local",op="all_reduce",rank="0"} 1`) {
		t.Errorf("/metrics: %d, no count of rank 0's all_reduce in\n%s", code, body)
	}
	code, body := get(srv.URL + "/debug/flight")
	var dump gocomms.FlightDump
	if err := json.Unmarshal([]byte(body), &dump); code != http.StatusOK || err != nil || len(dump.Entries) != 1 || dump.Entries[0].Op != "all_reduce" {
		t.Errorf("/debug/flight: %d %v, want the one all_reduce: %s", code, err, body)
	}
	if code, body := get(srv.URL + "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine: %d %.200s", code, body)
	}
}

// BenchmarkAllReduceMetered is BenchmarkAllReduce's smallest case with
// metrics recorded: what recording costs an operation.
func BenchmarkAllReduceMetered(b *testing.B) {
	benchAllReduce(b, 2, 8, gocomms.WithMetrics(prometheus.NewRegistry()))
}

// TestMetricsCountWindowOperations puts into the next rank's window,
// directly (in-process ranks map each other's windows) and once out of
// range: both count as window operations, the second as an invalid one.
func TestMetricsCountWindowOperations(t *testing.T) {
	reg := prometheus.NewRegistry()
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		w, err := c.NewWindow(ctx, 64)
		if err != nil {
			return err
		}
		next := (c.Rank() + 1) % c.Size()
		if err := w.Put(ctx, gocomms.FromSlice([]float32{1, 2}), next, 0); err != nil {
			return err
		}
		if err := wantErr(w.Put(ctx, gocomms.FromSlice([]float32{1, 2}), next, 1000), gocomms.ErrInvalidArgument, "put out of range"); err != nil {
			return err
		}
		return w.Close(ctx)
	}, gocomms.WithMetrics(reg))
	ops := series(t, reg, "gocomms_window_operations_total")
	errs := series(t, reg, "gocomms_operation_errors_total")
	for r := range 2 {
		if got := ops[fmt.Sprintf("comm=local,op=window_put,rank=%d", r)]; got != 2 {
			t.Errorf("rank %d: %v window puts, want 2: %v", r, got, ops)
		}
		if got := errs[fmt.Sprintf("comm=local,kind=invalid,op=window_put,rank=%d", r)]; got != 1 {
			t.Errorf("rank %d: %v invalid window puts, want 1: %v", r, got, errs)
		}
	}
}
