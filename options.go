package gocomms

import (
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/launcher"
	"github.com/gocomms/gocomms/metrics"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// DefaultTimeout bounds every operation when neither the call, the
// communicator nor TORCHCOMM_TIMEOUT_SECONDS says otherwise (torchcomms'
// default).
const DefaultTimeout = 600 * time.Second

// Config is a communicator's validated configuration, as a backend factory
// receives it.
type Config = backend.Config

// Option configures NewComm and Split.
type Option func(*options)

type options struct {
	cfg        Config
	algorithms map[OpName]string // WithAlgorithm's
	hasRank    bool
	hasSize    bool
	abort      *bool
	exit       func(code int)
	logger     *slog.Logger     // WithLogger's, before the communicator's attributes
	metrics    *metrics.Metrics // WithMetrics'
	metricsErr error
	checks     bool // WithCollectiveChecks'
}

// WithRank sets this process's rank. Without WithRank and WithSize, the
// launcher's environment gives them (see package store/bootstrap).
func WithRank(rank int) Option {
	return func(o *options) { o.cfg.Rank, o.hasRank = rank, true }
}

// WithSize sets the number of ranks.
func WithSize(size int) Option {
	return func(o *options) { o.cfg.Size, o.hasSize = size, true }
}

// WithStore sets the rendezvous store (an in-memory one for in-process
// groups). Without it, ranks meet at the TCPStore at MASTER_ADDR and
// MASTER_PORT, which rank 0 serves unless TORCHELASTIC_USE_AGENT_STORE says
// the launcher does.
func WithStore(s store.Store) Option { return func(o *options) { o.cfg.Store = s } }

// WithNetwork sets the transport ranks connect over. Without it, ranks
// on one host connect through shared memory and others over TCP, or as
// GOCOMMS_TRANSPORT says ("auto", "shm", "tcp"); TCP listens on
// GOCOMMS_PORT_RANGE ("lo-hi") if set, on the interface
// GOCOMMS_SOCKET_IFNAME picks (NCCL_SOCKET_IFNAME's syntax) if set.
func WithNetwork(n transport.Network) Option { return func(o *options) { o.cfg.Network = n } }

// runtimeOf returns the actor runtime cfg carries, nil if none.
func runtimeOf(cfg *Config) *actors.Runtime {
	rt, _ := cfg.Runtime.(*actors.Runtime)
	return rt
}

// WithRuntime shares a runtime (actor system, clock, dispatcher) between
// communicators; without it each NewComm makes its own.
func WithRuntime(rt *actors.Runtime) Option {
	return func(o *options) {
		if rt != nil {
			o.cfg.Runtime = rt
		}
	}
}

// WithTimeout sets the default per-operation timeout.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.cfg.Timeout = d } }

// WithLogger sets the logger; gocomms is quiet without one, unless
// WithRuntime's runtime has one. Every record a communicator logs carries
// its name, rank and size ("comm", "rank", "size").
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithLocalSize says how many ranks share each host, ranks being numbered
// host by host (Config.LocalSize); LOCAL_WORLD_SIZE says so under a
// launcher. Every rank must give the same.
func WithLocalSize(n int) Option { return func(o *options) { o.cfg.LocalSize = n } }

// WithHints sets free-form backend hints. It copies h once: the
// communicators made with the option share the copy, which none writes.
func WithHints(h map[string]string) Option {
	hints := maps.Clone(h)
	return func(o *options) { o.cfg.Hints = hints }
}

// WithFailureDetector sets how a rank watches the peers it waits on:
// after heartbeat without a frame from one it asks for a frame, and after
// silence the peer has failed, and the operations that need it fail with
// ErrPeerFailed naming it. A crashed process's connections reset at once,
// which names it sooner; the watch finds the ranks that hang or that the
// network cuts off without a reset. A negative silence turns it off.
func WithFailureDetector(heartbeat, silence time.Duration) Option {
	return func(o *options) { o.cfg.Heartbeat, o.cfg.Silence = heartbeat, silence }
}

// WithLinkRelease makes a rank link each of a collective's peers as the
// collective comes to it, and release the link, and its connection,
// once no operation uses it: a rank then holds links only to the peers
// its running collective still exchanges frames with, not to every peer
// it ever did. A job of many ranks, whose schedules reach log2 p peers
// or more, trades a connection made again for each collective for that
// memory. A released link behaves as one kept: what either rank sends
// later goes on a new one. A rank learns of a peer's failure over the
// links it holds, or from its peers' word: one it released learns at
// the next link to it. Such a communicator runs collectives and
// point-to-point operations; agreements and windows, whose peers answer
// at any time, fail with ErrInvalidArgument. It needs a network that
// connects a pair again after a release, as the simulator's does.
func WithLinkRelease() Option {
	return func(o *options) { o.cfg.ReleaseLinks = true }
}

// WithAbortProcessOnError makes a timed-out or failed operation exit the
// process after running the abort hooks, as torchcomms does by default.
// Without this option, TORCHCOMM_ABORT_ON_ERROR decides; unset, it is off,
// unlike torchcomms: a library should not end a process that may hold
// other communicators (RunLocal's ranks share one), and an operation here
// fails with an error naming the ranks at fault rather than leaving its
// communicator stuck.
func WithAbortProcessOnError(on bool) Option { return func(o *options) { o.abort = &on } }

// WithReconfigure creates the communicator in torchcomms' dynamic regime:
// NewComm connects nothing and returns at once, operations fail with
// ErrNotInitialized, and Reconfigure, given the InitHandle of every
// process that is to be a member, returns the communicator they form.
// Rank and size come from there, never from the environment.
func WithReconfigure() Option { return func(o *options) { o.cfg.Dynamic = true } }

// resolve applies opts and the environment and validates the result.
func resolve(name string, device Device, opts []Option) (*options, error) {
	o := &options{exit: os.Exit}
	o.cfg.Name, o.cfg.Device = name, device
	for _, opt := range opts {
		opt(o)
	}
	c := &o.cfg
	if name == "" {
		return nil, commerr.Invalid("communicator name is empty")
	}
	switch {
	case c.Dynamic:
		c.Rank, c.Size = -1, 0
	case o.hasRank != o.hasSize:
		return nil, commerr.Invalid("WithRank and WithSize go together")
	case !o.hasRank:
		env, err := launcher.FromEnv(os.LookupEnv)
		if err != nil {
			return nil, commerr.Invalid("%v", err)
		}
		c.Rank, c.Size = env.Rank, env.Size
		if c.LocalSize == 0 {
			c.LocalSize = max(env.LocalSize, 0)
		}
	}
	if !c.Dynamic && (c.Size < 1 || c.Rank < 0 || c.Rank >= c.Size) {
		return nil, commerr.Invalid("rank %d out of range for size %d", c.Rank, c.Size)
	}
	if c.LocalSize < 0 {
		return nil, commerr.Invalid("negative local size %d", c.LocalSize)
	}
	if c.Timeout < 0 {
		return nil, commerr.Invalid("negative timeout %v", c.Timeout)
	}
	if c.Heartbeat < 0 || c.Silence > 0 && c.Heartbeat > c.Silence {
		return nil, commerr.Invalid("failure detector: heartbeat %v must be positive and at most the silence %v", c.Heartbeat, c.Silence)
	}
	if o.metricsErr != nil {
		return nil, commerr.Invalid("WithMetrics: %v", o.metricsErr)
	}
	if o.metrics != nil && c.Store != nil {
		c.Store = o.metrics.Store(c.Store)
	}
	if err := resolveAlgorithms(c, o.algorithms, os.LookupEnv); err != nil {
		return nil, err
	}
	if c.Timeout == 0 {
		t, err := envTimeout()
		if err != nil {
			return nil, err
		}
		c.Timeout = t
	}
	if o.abort != nil {
		c.AbortProcessOnError = *o.abort
	} else if v, ok := os.LookupEnv("TORCHCOMM_ABORT_ON_ERROR"); ok {
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, commerr.Invalid("TORCHCOMM_ABORT_ON_ERROR=%q is not a boolean", v)
		}
		c.AbortProcessOnError = on
	}
	if !o.checks {
		on, err := envChecks()
		if err != nil {
			return nil, err
		}
		o.checks = on
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
		if rt := runtimeOf(c); rt != nil {
			o.logger = rt.Logger
		}
	}
	if c.Dynamic {
		c.Logger = o.logger.With("comm", name) // rank and size come with Reconfigure
	} else {
		c.Logger = o.logger.With("comm", name, "rank", c.Rank, "size", c.Size)
	}
	return o, nil
}

// envTimeout is TORCHCOMM_TIMEOUT_SECONDS, or DefaultTimeout.
func envTimeout() (time.Duration, error) {
	v, ok := os.LookupEnv("TORCHCOMM_TIMEOUT_SECONDS")
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultTimeout, nil
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || s <= 0 {
		return 0, commerr.Invalid("TORCHCOMM_TIMEOUT_SECONDS=%q is not a positive number", v)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// envChecks reports whether GOCOMMS_CHECK_COLLECTIVES or
// TORCH_DISTRIBUTED_DEBUG=DETAIL ask for WithCollectiveChecks.
func envChecks() (bool, error) {
	if v, ok := os.LookupEnv("GOCOMMS_CHECK_COLLECTIVES"); ok && strings.TrimSpace(v) != "" {
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return false, commerr.Invalid("GOCOMMS_CHECK_COLLECTIVES=%q is not a boolean", v)
		}
		return on, nil
	}
	return strings.EqualFold(strings.TrimSpace(os.Getenv("TORCH_DISTRIBUTED_DEBUG")), "DETAIL"), nil
}

// CallOption configures one operation.
type CallOption func(*call)

type call struct {
	stream   *cuda.Stream
	timeout  time.Duration
	hints    map[string]string
	tag      int
	internal bool // issued by the communicator itself: no hooks
	checked  bool
}

// OpTimeout bounds this operation, overriding the communicator's default.
func OpTimeout(d time.Duration) CallOption { return func(c *call) { c.timeout = d } }

// OnStream orders an operation on GPU tensors after the work queued on s
// so far, as torchcomms orders it after the caller's current stream.
// Without it, the operation comes after the work on the device's legacy
// default stream.
func OnStream(s *cuda.Stream) CallOption { return func(c *call) { c.stream = s } }

// OpHints passes free-form hints to the backend for this operation.
func OpHints(h map[string]string) CallOption { return func(c *call) { c.hints = h } }

// Checked tells Custom that its schedule was proved already (by
// algorithms.Check, as Build made it from a Generator, or by
// algorithms.CheckPart), so that it skips algorithms.CheckPart, whose cost
// grows with the square of the schedule's steps.
func Checked() CallOption { return func(c *call) { c.checked = true } }

// Tag sets the tag of a point-to-point message: the k-th send with tag t
// from a to b matches the k-th receive with tag t on b from a. A tag is
// at least 0; the native backend takes tags up to 2^30-1.
func Tag(t int) CallOption { return func(c *call) { c.tag = t } }
