package gocomms

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocomms/gocomms/health"
)

// DefaultStuckAfter is how long an operation may be in flight before
// Handler's /readyz calls the communicator unready, unless StuckAfter
// says otherwise.
const DefaultStuckAfter = health.DefaultStuckAfter

// HandlerOption configures Handler.
type HandlerOption func(*handlerConfig)

type handlerConfig struct{ health.Config }

// StuckAfter sets how long an operation may be in flight (issued and
// not ended) before /readyz reports it.
func StuckAfter(d time.Duration) HandlerOption {
	return func(h *handlerConfig) { h.StuckAfter = d }
}

// MetricsFrom serves g at /metrics, instead of the registry WithMetrics
// gave the communicator.
func MetricsFrom(g prometheus.Gatherer) HandlerOption {
	return func(h *handlerConfig) { h.Metrics = g }
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
	hc := handlerConfig{health.Config{StuckAfter: DefaultStuckAfter}}
	if c.metrics != nil {
		hc.Metrics, _ = c.metrics.Metrics().Registerer().(prometheus.Gatherer)
	}
	for _, o := range opts {
		o(&hc)
	}
	return health.Handler(healthView{c}, hc.Config)
}

// healthView is c as health reads it.
type healthView struct{ *Comm }

func (v healthView) Finalized() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.finalized
}
