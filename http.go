package gocomms

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gocomms/gocomms/internal/pprofhttp"
)

// DefaultStuckAfter is how long an operation may be in flight before
// Handler's /readyz calls the communicator unready, unless StuckAfter
// says otherwise.
const DefaultStuckAfter = time.Minute

// HandlerOption configures Handler.
type HandlerOption func(*handlerConfig)

type handlerConfig struct {
	stuckAfter time.Duration
	gatherer   prometheus.Gatherer
}

// StuckAfter sets how long an operation may be in flight (issued and
// not ended) before /readyz reports it.
func StuckAfter(d time.Duration) HandlerOption {
	return func(h *handlerConfig) { h.stuckAfter = d }
}

// MetricsFrom serves g at /metrics, instead of the registry WithMetrics
// gave the communicator.
func MetricsFrom(g prometheus.Gatherer) HandlerOption {
	return func(h *handlerConfig) { h.gatherer = g }
}

// Handler serves an operator's view of c, for an embedder to mount:
//
//	/metrics       the Prometheus metrics of the registry WithMetrics gave c
//	               (or MetricsFrom's); absent without either
//	/healthz       200 while the process serves
//	/readyz        200 once c is initialized, while it is not aborted or
//	               finalized and no operation has been in flight longer than
//	               StuckAfter (DefaultStuckAfter); else 503 saying why,
//	               naming the oldest stuck operation, from the flight record
//	/debug/flight  c's flight record, as DumpFlightRecord writes it
//	/debug/pprof/  the runtime's profiles, on this handler's mux only
func Handler(c *Comm, opts ...HandlerOption) http.Handler {
	hc := handlerConfig{stuckAfter: DefaultStuckAfter}
	if c.metrics != nil {
		hc.gatherer, _ = c.metrics.Metrics().Registerer().(prometheus.Gatherer)
	}
	for _, o := range opts {
		o(&hc)
	}
	mux := http.NewServeMux()
	if hc.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(hc.gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := c.unready(hc.stuckAfter); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /debug/flight", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		c.DumpFlightRecord(w)
	})
	pprofhttp.Register(mux)
	return mux
}

// unready says why c is not ready, or "" if it is: not initialized,
// aborted, finalized, or an operation in flight for longer than
// stuckAfter, the oldest such one named. Operations the flight recorder
// does not keep (TORCHCOMM_FR_BUFFER_SIZE=0) are not seen.
func (c *Comm) unready(stuckAfter time.Duration) string {
	if c.Size() == 0 {
		return "not initialized: waiting for Reconfigure"
	}
	if c.IsAborted() {
		return "aborted"
	}
	c.mu.Lock()
	finalized := c.finalized
	c.mu.Unlock()
	if finalized {
		return "finalized"
	}
	now := time.Now()
	var oldest *FlightEntry
	stuck := 0
	entries := c.FlightRecord()
	for i := range entries {
		e := &entries[i]
		if (e.State == FlightIssued || e.State == FlightStarted) && now.Sub(e.Issued) > stuckAfter {
			stuck++
			if oldest == nil {
				oldest = e
			}
		}
	}
	if oldest == nil {
		return ""
	}
	why := fmt.Sprintf("comm %q rank %d: %s #%d (op_id %d, %s) in flight for %v", c.Name(), c.Rank(),
		oldest.Op, oldest.Seq, oldest.ID, oldest.State, now.Sub(oldest.Issued).Round(time.Millisecond))
	if stuck > 1 {
		why += fmt.Sprintf("; %d more operations in flight behind it", stuck-1)
	}
	return why
}
