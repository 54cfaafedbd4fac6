package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocomms/gocomms/commerr"
)

// Namespace prefixes every metric's name.
const Namespace = "gocomms"

// The error kinds that label gocomms_operation_errors_total (Kind).
const (
	KindTimeout    = "timeout"
	KindPeerFailed = "peer_failed"
	KindAborted    = "aborted"
	KindMismatch   = "mismatch"
	KindInvalid    = "invalid"
	KindOther      = "other"
)

// SizeClasses are the values of the size label of the latency histogram,
// smallest first: bounded, so that sizes never multiply the series.
var SizeClasses = [...]string{"<=1KiB", "<=64KiB", "<=1MiB", "<=16MiB", ">16MiB"}

// sizeLimits are the upper bounds of SizeClasses but the last.
var sizeLimits = [...]int{1 << 10, 64 << 10, 1 << 20, 16 << 20}

// SizeClass returns the class of an operation moving n bytes.
func SizeClass(n int) string { return SizeClasses[sizeIndex(n)] }

func sizeIndex(n int) int {
	for i, limit := range sizeLimits {
		if n <= limit {
			return i
		}
	}
	return len(sizeLimits)
}

// Kind classifies an operation's error. issued says whether the
// communicator had accepted the call: an invalid argument found after
// that is one that other ranks showed to differ from theirs, a mismatch.
func Kind(err error, issued bool) string {
	switch {
	case errors.Is(err, commerr.ErrTimeout):
		return KindTimeout
	case errors.Is(err, commerr.ErrPeerFailed):
		return KindPeerFailed
	case errors.Is(err, commerr.ErrAborted), errors.Is(err, commerr.ErrRevoked):
		return KindAborted
	case errors.Is(err, commerr.ErrInvalidArgument) && issued:
		return KindMismatch
	case errors.Is(err, commerr.ErrInvalidArgument), errors.Is(err, commerr.ErrFinalized), errors.Is(err, commerr.ErrNotInitialized):
		return KindInvalid
	}
	return KindOther
}

// Metrics is one registry's set of gocomms collectors, shared by every
// communicator that records into it.
type Metrics struct {
	reg prometheus.Registerer

	ops          *prometheus.CounterVec   // comm, rank, op
	bytes        *prometheus.CounterVec   // comm, rank, op
	latency      *prometheus.HistogramVec // comm, rank, op, size
	errs         *prometheus.CounterVec   // comm, rank, op, kind
	inFlight     *prometheus.GaugeVec     // comm, rank
	peerFailures *prometheus.CounterVec   // comm, rank
	windowOps    *prometheus.CounterVec   // comm, rank, op
	storeOps     *prometheus.HistogramVec // op
	storeErrs    *prometheus.CounterVec   // op
}

// LinkStats returns the process's totals over its links: the new
// connections they made after one broke, and the frames they sent again
// on them. The engine keeps them; metrics only reads them.
type LinkStats func() (reconnects, retransmitted uint64)

// New returns the collectors registered on reg, registering them unless
// an earlier New did: communicators of a process made with the same
// registry share one set of vectors. links reports the process's link
// totals. It fails if reg holds other collectors under the same names.
func New(reg prometheus.Registerer, links LinkStats) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil registerer")
	}
	m := &Metrics{reg: reg}
	var err error
	comm := []string{"comm", "rank"}
	op := []string{"comm", "rank", "op"}
	if m.ops, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "operations_total",
		Help: "Operations that ended, failed ones included, per communicator and operation."}, op)); err != nil {
		return nil, err
	}
	if m.bytes, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "operation_bytes_total",
		Help: "Input plus output bytes of the operations that completed."}, op)); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "operation_duration_seconds",
		Help:    "Time from issue to completion of the operations that completed, by size class of their input plus output bytes.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 4, 12)}, append(op, "size"))); err != nil {
		return nil, err
	}
	if m.errs, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "operation_errors_total",
		Help: "Operations that failed, by kind: timeout, peer_failed, aborted, mismatch, invalid, other."}, append(op, "kind"))); err != nil {
		return nil, err
	}
	if m.inFlight, err = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "operations_in_flight",
		Help: "Operations issued and not yet ended."}, comm)); err != nil {
		return nil, err
	}
	if m.peerFailures, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "peer_failures_total",
		Help: "Peers that operations' errors named failed, each counted once per communicator."}, comm)); err != nil {
		return nil, err
	}
	if m.windowOps, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "window_operations_total",
		Help: "RMA window operations that ended, failed ones included (their errors count in operation_errors_total)."}, op)); err != nil {
		return nil, err
	}
	if m.storeOps, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "store_round_trip_seconds",
		Help:    "Calls to the rendezvous store, by method, and how long each took (waits included).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10)}, []string{"op"})); err != nil {
		return nil, err
	}
	if m.storeErrs, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "store_errors_total",
		Help: "Calls to the rendezvous store that failed, by method."}, []string{"op"})); err != nil {
		return nil, err
	}
	if _, err = register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "link_reconnects_total",
		Help: "New connections the process's links made after one broke."}, func() float64 {
		n, _ := links()
		return float64(n)
	})); err != nil {
		return nil, err
	}
	if _, err = register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "link_retransmitted_frames_total",
		Help: "Frames the process's links sent again on a new connection: sent on a broken one and not acknowledged."}, func() float64 {
		_, n := links()
		return float64(n)
	})); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c on reg, or returns the collector an earlier New
// registered there under the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("metrics: %w", err)
}

// Registerer returns the registry the collectors are on.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Comm returns the series of rank rank of the communicator name.
func (m *Metrics) Comm(name string, rank int) *Comm {
	r := strconv.Itoa(rank)
	return &Comm{m: m, name: name, rank: r,
		inFlight:     m.inFlight.WithLabelValues(name, r),
		peerFailures: m.peerFailures.WithLabelValues(name, r),
		ops:          map[string]*opSeries{},
		failed:       map[int]bool{}}
}

// Comm records one communicator rank's operations. It is safe for
// concurrent use.
type Comm struct {
	m            *Metrics
	name, rank   string
	inFlight     prometheus.Gauge
	peerFailures prometheus.Counter

	mu     sync.Mutex
	ops    map[string]*opSeries // by operation name: resolved once, not per operation
	failed map[int]bool         // peers counted in peerFailures
}

// opSeries are one operation name's series of a communicator rank.
type opSeries struct {
	count, bytes prometheus.Counter
	latency      [len(SizeClasses)]prometheus.Observer
}

func (c *Comm) series(op string) *opSeries {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.ops[op]
	if s == nil {
		s = &opSeries{count: c.m.ops.WithLabelValues(c.name, c.rank, op), bytes: c.m.bytes.WithLabelValues(c.name, c.rank, op)}
		for i, class := range SizeClasses {
			s.latency[i] = c.m.latency.WithLabelValues(c.name, c.rank, op, class)
		}
		c.ops[op] = s
	}
	return s
}

// Metrics returns the collectors c records into.
func (c *Comm) Metrics() *Metrics { return c.m }

// Issued records that an operation was handed to the backend; Ended
// follows once it ends.
func (c *Comm) Issued() { c.inFlight.Inc() }

// Ended records the end of an issued operation op that moved n bytes
// (inputs plus outputs) and took took since its issue, or failed with
// err.
func (c *Comm) Ended(op string, n int, took time.Duration, err error) {
	c.inFlight.Dec()
	s := c.series(op)
	s.count.Inc()
	if err != nil {
		c.failure(op, err, true)
		return
	}
	s.bytes.Add(float64(n))
	s.latency[sizeIndex(n)].Observe(took.Seconds())
}

// Rejected records an operation the communicator refused before issuing
// it.
func (c *Comm) Rejected(op string, err error) {
	c.series(op).count.Inc()
	c.failure(op, err, false)
}

// WindowEnded records the end of an RMA window operation. Ranks do not
// compare a window operation's arguments, so an invalid one is never a
// mismatch.
func (c *Comm) WindowEnded(op string, err error) {
	c.m.windowOps.WithLabelValues(c.name, c.rank, op).Inc()
	if err != nil {
		c.failure(op, err, false)
	}
}

// failure counts err by kind, and the peers it names failed that were
// not counted before.
func (c *Comm) failure(op string, err error, issued bool) {
	kind := Kind(err, issued)
	c.m.errs.WithLabelValues(c.name, c.rank, op, kind).Inc()
	var oe *commerr.OpError
	if kind != KindPeerFailed || !errors.As(err, &oe) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range oe.Ranks {
		if !c.failed[r] {
			c.failed[r] = true
			c.peerFailures.Inc()
		}
	}
}
