package gocomms

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocomms/gocomms/engine"
	"github.com/gocomms/gocomms/metrics"
)

// WithMetrics records the communicator's operations in Prometheus
// collectors registered on reg (package metrics has their names and
// labels): every communicator of a process given the same reg shares one
// set, labelled by communicator name and rank, and its splits and
// reconfigured successors record there too. A store given by WithStore
// has its round trips recorded. Without it nothing is recorded.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(o *options) { o.metrics, o.metricsErr = metrics.New(reg, engine.LinkStats) }
}

// metricsOption passes c's metrics, if any, to a communicator made from it.
func (c *Comm) metricsOption() Option {
	return func(o *options) {
		if c.metrics != nil {
			o.metrics = c.metrics.Metrics()
		}
	}
}

// opBytes is what op moves: its input bytes plus its output bytes, sends
// counting as inputs and receives as outputs.
func opBytes(op *Op) int {
	n := 0
	for _, t := range op.Inputs {
		n += t.NBytes()
	}
	for _, t := range op.Outputs {
		n += t.NBytes()
	}
	for _, m := range op.P2P {
		n += m.Tensor.NBytes()
	}
	return n
}

// metered records the end of a window operation, failed with err or
// not, and returns err.
func (w *Window) metered(name OpName, err error) error {
	if m := w.c.metrics; m != nil {
		m.WindowEnded(string(name), err)
	}
	return err
}
