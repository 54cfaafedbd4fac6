package health

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gocomms/gocomms/flight"
	"github.com/gocomms/gocomms/internal/pprofhttp"
)

// DefaultStuckAfter is how long an operation may be in flight before
// /readyz calls the communicator unready, unless Config says otherwise.
const DefaultStuckAfter = time.Minute

// Comm is what the handler reads of a communicator.
type Comm interface {
	Name() string
	Rank() int
	IsInitialized() bool
	IsAborted() bool
	Finalized() bool
	FlightRecord() []flight.Entry
	DumpFlightRecord(w io.Writer) error
}

// Config is what the handler serves besides the communicator.
type Config struct {
	// StuckAfter is how long an operation may be in flight (issued and
	// not ended) before /readyz reports it.
	StuckAfter time.Duration
	// Metrics is served at /metrics; nil serves none.
	Metrics prometheus.Gatherer
}

// Handler serves c's view, as gocomms.Handler documents it: /metrics,
// /healthz, /readyz, /debug/flight and /debug/pprof/.
func Handler(c Comm, cfg Config) http.Handler {
	mux := http.NewServeMux()
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := unready(c, cfg.StuckAfter); why != "" {
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
func unready(c Comm, stuckAfter time.Duration) string {
	switch {
	case !c.IsInitialized():
		return "not initialized: waiting for Reconfigure"
	case c.IsAborted():
		return "aborted"
	case c.Finalized():
		return "finalized"
	}
	now := time.Now()
	var oldest *flight.Entry
	stuck := 0
	entries := c.FlightRecord()
	for i := range entries {
		e := &entries[i]
		if (e.State == flight.Issued || e.State == flight.Started) && now.Sub(e.Issued) > stuckAfter {
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
