package simulation

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// Config is everything a run depends on besides the build: a run is a
// function of (Config, Seed).
type Config struct {
	Ranks    int
	Topology Topology
	// Op is the collective every rank runs Iterations times, one after
	// another, on Count elements of DType (per rank for AllGather and
	// ReduceScatter blocks), summing where it reduces.
	Op         algorithms.Kind // a collective, or PointToPoint
	Count      int
	DType      tensor.DType
	Algorithm  string // "" lets the selector choose
	ChunkBytes int    // 0: the schedule's default
	Root       int
	Iterations int
	// Phantom moves no data: frames carry only their length, which the
	// network charges in full, and results go unchecked. It times
	// operations whose buffers would not fit in memory (PhantomAbove).
	Phantom bool
	Timeout time.Duration // per operation, in virtual time
	Seed    uint64
	Faults  Plan
	// Jitter delays each frame by up to this much more, drawn from the
	// seed, reordering what TCP lets reorder: frames of different
	// connections.
	Jitter time.Duration
	// Trace, when set, receives the run's timeline in Chrome trace format
	// (see chrome.go): meant for runs of up to a few thousand ranks.
	Trace io.Writer
	// Agree has every rank run a fault-tolerant agreement (actors/agree)
	// after its operations, the core of ULFM's agree and shrink; with no
	// iterations, alone. The survivors must all decide, and alike.
	Agree bool
	// Windows has every rank, once its operations are over, open a window
	// (Comm.NewWindowAsync), put a value into the next rank's with a
	// signal and wait for the previous rank's: the halo exchange of a
	// stencil code, one-sided. Each rank's value is checked.
	Windows bool
	// AfterShrink has the survivors of the agreement shrink to a
	// communicator of their own, as Comm.Shrink does, and run this many
	// all-reduces there, the training loop going on; each is checked.
	AfterShrink int
	// Survive says the plan's faults are ones the engine claims to ride
	// out (harmless ones, and connection resets it reconnects through):
	// every operation must then complete, and a failure is a violation
	// even when a fault explains it.
	Survive bool
	// Logger, when set, receives the engine's log, stamped with virtual
	// time by the runtime's clock only where the handler reads it; nil
	// discards it.
	Logger *slog.Logger
	// Heartbeat and Silence set the ranks' failure detector, in virtual
	// time (zero: 1 s and 5 s, the engine's defaults).
	Heartbeat, Silence time.Duration
	// Limit is the liveness bound: every operation must have ended this
	// long after the last fault healed (after time zero without faults),
	// or it has hung.
	Limit time.Duration
	// Progress, when set, is told how far the run has got, about every
	// ProgressEvery of wall time: for long runs' operators, changing
	// nothing of the run.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// AtEnd, when set, is called once virtual time has stopped, before
	// the result is made, with every rank's state still held: a heap
	// profile written then shows what the run keeps.
	AtEnd func()
	// ReleaseLinks has every rank link the peers of a collective as it
	// comes to them and release each link once no operation uses it
	// (gocomms.WithLinkRelease): a rank then holds a link or two where
	// recursive doubling would keep log2 p. Its release frames are the
	// run's too.
	ReleaseLinks bool
	// Protoactor runs the actors through protoactor's contexts, processes
	// and registry, as a process does, instead of the simulator's own
	// dispatch (dispatch.go): slower, the same messages to each actor.
	Protoactor bool
}

// Progress is how far a run has got.
type Progress struct {
	Phase   Phase
	Built   int           // ranks made so far
	SimTime time.Duration // virtual time
	Events  int64         // messages actors received
	Frames  int64         // frames the network carried
	Wall    time.Duration // since the run began
}

// Phase is what a run is doing: setting up or simulating.
type Phase string

const (
	// Building: the ranks' communicators are being made, before any
	// virtual time runs.
	Building Phase = "building ranks"
	// Linking: the ranks start their operations and make the links they
	// need, at virtual time zero.
	Linking Phase = "making links"
	// Simulating: virtual time runs.
	Simulating Phase = "simulating"
)

// reportProgress arms cfg.Progress on the loop and while ranks are
// built. It reads the wall clock, which only the report sees.
func (r *run) reportProgress() {
	report, every := r.cfg.Progress, cmp.Or(r.cfg.ProgressEvery, time.Second)
	if report == nil {
		return
	}
	start := time.Now()
	last := start
	r.loop.tick = func() {
		now := time.Now()
		if now.Sub(last) < every {
			return
		}
		last = now
		phase := Simulating
		switch {
		case r.built < r.cfg.Ranks:
			phase = Building
		case r.loop.Elapsed() == 0:
			phase = Linking
		}
		report(Progress{Phase: phase, Built: r.built, SimTime: r.loop.Elapsed(), Events: r.trace.Events(),
			Frames: r.net.frames, Wall: now.Sub(start)})
	}
}

// Result is what a run did and what it broke.
type Result struct {
	Algorithm string        // the schedule that ran: Config.Algorithm, or the selector's choice
	SimTime   time.Duration // when the last operation ended
	Hash      uint64        // the trace's fingerprint
	Events    int64         // messages actors received
	Frames    int64         // frames the network carried
	Bytes     int64         // their payload bytes
	Redials   int64         // connections made for a pair whose earlier one broke
	// PeakConnections is the most connections open at once: with
	// Config.ReleaseLinks, the pairs whose links are held; without, every
	// pair that ever talked.
	PeakConnections int64
	Ranks           []Outcome
	Agreement       *Agreement   // with Config.Agree
	AfterShrink     *AfterShrink // with Config.AfterShrink
	Windows         int          // with Config.Windows: ranks whose one-sided exchange ended without error
	// Violations lists every broken invariant: a wrong result, an error
	// that names no failed rank, an operation that never ended.
	Violations []string
}

// Outcome is one rank's run.
type Outcome struct {
	Crashed   bool
	Completed int   // operations that ended without error
	Err       error // the first operation's error, if any failed
	Pending   int   // operations that never ended
}

// OK reports whether the run broke no invariant.
func (r *Result) OK() bool { return len(r.Violations) == 0 }

func (c *Config) validate() error {
	switch {
	case c.Ranks < 1 || c.Ranks > math.MaxInt32:
		return fmt.Errorf("simulation: %d ranks", c.Ranks)
	case c.Count < 0:
		return fmt.Errorf("simulation: count %d", c.Count)
	case c.Iterations < 0 || c.Iterations == 0 && !c.Agree && !c.Windows:
		return fmt.Errorf("simulation: %d iterations", c.Iterations)
	case c.Timeout <= 0 || c.Limit <= 0:
		return fmt.Errorf("simulation: timeout %v and limit %v must be positive", c.Timeout, c.Limit)
	case c.AfterShrink < 0 || c.AfterShrink > 0 && !c.Agree:
		return fmt.Errorf("simulation: %d all-reduces after a shrink, which needs an agreement", c.AfterShrink)
	case c.Heartbeat < 0 || c.Silence > 0 && c.Heartbeat > c.Silence:
		return fmt.Errorf("simulation: heartbeat %v must be positive and at most the silence %v", c.Heartbeat, c.Silence)
	case c.Op == PointToPoint && c.Ranks < 2:
		return fmt.Errorf("simulation: point-to-point needs 2 ranks or more, got %d", c.Ranks)
	case c.Op == algorithms.Gather || c.Op == algorithms.Scatter || c.Op == algorithms.AllToAll:
		return fmt.Errorf("simulation: %v is not simulated (have all_reduce, reduce, broadcast, all_gather, reduce_scatter, barrier and point-to-point)", c.Op)
	case c.ReleaseLinks && (c.Agree || c.Windows):
		return fmt.Errorf("simulation: ranks that release their links run neither an agreement nor windows")
	case c.Windows && (c.Agree || c.Phantom):
		return fmt.Errorf("simulation: the one-sided phase runs neither with an agreement nor on phantom data")
	case c.Jitter < 0:
		return fmt.Errorf("simulation: negative jitter %v", c.Jitter)
	}
	switch c.DType {
	case tensor.Int64, tensor.Float32, tensor.Float64:
	default:
		return fmt.Errorf("simulation: dtype %v: the simulator checks int64, float32 and float64", c.DType)
	}
	if err := c.Topology.validate(c.Ranks); err != nil {
		return err
	}
	return c.Faults.validate(c.Ranks)
}

// run is one simulation in progress.
type run struct {
	cfg    *Config
	loop   *Loop
	rt     *actors.Runtime
	net    *network
	trace  *Trace
	comms  []*gocomms.Comm // by rank
	data   *dataset
	chrome *chromeTrace  // nil unless Config.Trace is set
	ends   [][]opEnd     // by rank, by iteration
	wrong  []string      // results that differ from the plain loop's
	last   time.Duration // when the last operation ended

	windowEnds []opEnd        // by rank, with Config.Windows
	decided    []*agree.Value // by rank, with Config.Agree
	shrunk     *shrunk        // the survivors' communicator, with Config.AfterShrink
	agreeFrom  int64          // frames carried before the first rank agreed

	built int // ranks joined so far
}

// opEnd is how an operation ended, once it has.
type opEnd struct {
	ended bool
	err   error
}

// Run simulates cfg and checks its invariants.
func Run(cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := newRun(&cfg, logger)
	defer r.rt.System().Shutdown()
	r.reportProgress()
	r.data = newDataset(&cfg)
	if cfg.Trace != nil {
		r.chrome = newChromeTrace(cfg.Trace, cfg.Ranks, cfg.Iterations)
		r.net.onFrame = r.chrome.frame
		for _, f := range cfg.Faults {
			r.chrome.fault(f, f.At)
		}
	}
	opts := r.commOptions()
	for i := range cfg.Ranks {
		if err := r.join(i, slices.Clip(opts)); err != nil {
			return nil, err
		}
		if r.built++; r.loop.tick != nil && r.built%tickEvery == 0 {
			r.loop.tick() // the loop does not run yet: the report comes from here
		}
	}
	for i := range cfg.Ranks {
		in, out := r.data.tensors(i)
		for it := range cfg.Iterations {
			r.submit(i, it, in, out)
		}
	}
	if cfg.Windows {
		r.windowEnds = make([]opEnd, cfg.Ranks)
		if cfg.Iterations == 0 {
			for i := range cfg.Ranks {
				r.openWindow(i)
			}
		}
	}
	if cfg.Agree {
		r.decided = make([]*agree.Value, cfg.Ranks)
		r.agreeFrom = -1
		if cfg.Iterations == 0 {
			for i := range cfg.Ranks {
				r.agree(i)
			}
		}
	}
	cfg.Faults.arm(r)
	r.loop.Run(cfg.Faults.healed() + cfg.Limit)
	if cfg.AtEnd != nil {
		cfg.AtEnd()
	}
	if r.chrome != nil {
		if err := r.chrome.close(); err != nil {
			return nil, fmt.Errorf("simulation: writing the trace: %w", err)
		}
	}
	return r.result(), nil
}

// newRun builds cfg's loop, trace, actor system and network, with no rank
// joined yet. Its caller shuts the actor system down.
func newRun(cfg *Config, logger *slog.Logger) *run {
	loop := NewLoop(cfg.Seed)
	trace := newTrace(loop)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	a := actors.Actors{System: sys, Dispatcher: loop}
	if cfg.Protoactor {
		a.Mailbox = trace.mailboxes()
	} else {
		a.Spawner = newDirect(sys, trace)
	}
	r := &run{
		cfg:   cfg,
		loop:  loop,
		trace: trace,
		rt:    actors.New(a, loop, loop, logger),
		net:   newNetwork(loop, cfg.Topology, cfg.Ranks, cfg.Faults, cfg.Jitter),
		comms: make([]*gocomms.Comm, cfg.Ranks),
		ends:  make([][]opEnd, cfg.Ranks),
	}
	r.net.forgets = cfg.ReleaseLinks
	return r
}

// runtimeFor is rank i's runtime: the run's own, with the clock of the
// plan's Skew fault on i if it has one, and, if the plan crashes i, a
// dispatcher that runs none of its actors' turns once it has crashed.
func (r *run) runtimeFor(i int) *actors.Runtime {
	rt := r.rt
	for _, f := range r.cfg.Faults {
		if f.Rank != i {
			continue
		}
		switch f.Kind {
		case Skew:
			rt = rt.WithClock(&skewedClock{loop: r.loop, from: f.At, rate: f.Factor})
		case Crash, Restart:
			rt = rt.WithDispatcher(crashable{Loop: r.loop, crashed: &r.net.crashed[i]})
		}
	}
	return rt
}

// crashable runs a rank's mailbox turns on the loop until the rank
// crashes, and none after: its actors freeze, as a crashed process's do.
type crashable struct {
	*Loop
	crashed *bool
}

func (c crashable) Schedule(turn func()) {
	if !*c.crashed {
		c.Loop.Schedule(turn)
	}
}

// join makes rank i's communicator, as a process would: NewComm, over
// the run's network and rank i's runtime, with opts, which every rank
// shares.
func (r *run) join(i int, opts []gocomms.Option) error {
	r.ends[i] = make([]opEnd, r.cfg.Iterations)
	rt := r.runtimeFor(i)
	device := gocomms.CPU
	if r.cfg.Phantom {
		device = tensor.Meta
	}
	c, err := gocomms.NewComm(context.Background(), gocomms.NativeBackend, device, "sim",
		append(opts, gocomms.WithRank(i), gocomms.WithRuntime(rt), gocomms.WithLogger(rt.Logger))...)
	if err != nil {
		return fmt.Errorf("simulation: rank %d: %w", i, err)
	}
	r.comms[i] = c
	return nil
}

// commOptions are the options of every rank's communicator.
func (r *run) commOptions() []gocomms.Option {
	cfg := r.cfg
	hints := map[string]string{}
	if cfg.Algorithm != "" {
		hints[gocomms.HintAlgorithm] = cfg.Algorithm
	}
	if cfg.ChunkBytes > 0 {
		hints[gocomms.HintChunkBytes] = strconv.Itoa(cfg.ChunkBytes)
	}
	opts := []gocomms.Option{gocomms.WithSize(cfg.Ranks), gocomms.WithNetwork(r.net), gocomms.WithTimeout(cfg.Timeout),
		gocomms.WithFailureDetector(cfg.Heartbeat, cfg.Silence), gocomms.WithLocalSize(cfg.Ranks / cfg.Topology.Nodes),
		gocomms.WithHints(hints)}
	if cfg.ReleaseLinks {
		opts = append(opts, gocomms.WithLinkRelease())
	}
	return opts
}

// submit issues rank i's iteration it through its communicator, over in
// and out.
func (r *run) submit(i, it int, in, out []*tensor.Tensor) {
	w := r.cfg.issue(r.comms[i], i, in, out)
	w.OnStart(func(*gocomms.Work) { r.started(i, it) })
	w.OnEnd(func(w *gocomms.Work) { r.done(i, it, w.Err()) })
}

// issue starts c's operation of the run, rank's, over in and out.
func (c *Config) issue(comm *gocomms.Comm, rank int, in, out []*tensor.Tensor) *gocomms.Work {
	sum, root := gocomms.Sum, c.Root
	switch c.Op {
	case PointToPoint:
		// Each rank sends block 0 to the next and receives block 1 from
		// the previous, in one batch: a ring shift.
		n := comm.Size()
		return comm.NewBatch().Send(in[0], (rank+1)%n).Recv(in[1], (rank+n-1)%n).IssueAsync()
	case algorithms.AllReduce:
		return comm.AllReduceAsync(in[0], sum)
	case algorithms.Reduce:
		return comm.ReduceAsync(in[0], root, sum)
	case algorithms.Broadcast:
		return comm.BroadcastAsync(in[0], root)
	case algorithms.AllGather:
		return comm.AllGatherAsync(out, in[0])
	case algorithms.ReduceScatter:
		return comm.ReduceScatterAsync(out[0], in, sum)
	case algorithms.AllToAll:
		return comm.AllToAllAsync(out, in)
	case algorithms.Gather:
		return comm.GatherAsync(out, in[0], root)
	case algorithms.Scatter:
		return comm.ScatterAsync(out[0], in, root)
	}
	return comm.BarrierAsync()
}

// PointToPoint, as Config.Op, runs a batch of point-to-point messages
// instead of a collective: each rank sends its input to the next rank and
// receives the previous rank's, in one batch (a ring shift), as
// Comm.BatchOp would.
const PointToPoint algorithms.Kind = 0

// opName names the operation the run simulates.
func (c *Config) opName() string {
	if c.Op == PointToPoint {
		return "send_recv"
	}
	return c.Op.String()
}

func (r *run) started(i, it int) {
	r.data.prepare(i)
	if r.chrome != nil {
		r.chrome.started(i, it, r.loop.Elapsed())
	}
}

// done records how rank i's iteration it ended, and checks its result
// while its buffers hold it.
func (r *run) done(i, it int, err error) {
	if r.net.crashed[i] {
		return // a crashed rank reports nothing
	}
	r.ends[i][it] = opEnd{ended: true, err: err}
	r.last = r.loop.Elapsed()
	if r.cfg.Agree && it == r.cfg.Iterations-1 {
		r.agree(i)
	}
	if r.cfg.Windows && it == r.cfg.Iterations-1 {
		r.openWindow(i)
	}
	if r.chrome != nil {
		r.chrome.ended(i, it, r.cfg.opName(), r.last, err)
	}
	if err == nil {
		if bad := r.data.check(i); bad != "" {
			r.wrong = append(r.wrong, fmt.Sprintf("rank %d: %s #%d: %s", i, r.cfg.opName(), it, bad))
		}
	}
}

// crash stops rank i at once: its actors stop and its connections reset.
func (r *run) crash(i int) {
	if r.net.crashed[i] {
		return
	}
	r.net.crash(i) // its dispatcher runs no more turns (crashable)
}

// sameRank maps the run's ranks to themselves, for the errors of its own
// communicator.
func sameRank(r int) int { return r }

// judge returns the invariant that iteration it of op, on run rank i,
// breaks by how it ended, or "": it never ended, or it failed under
// faults it must survive or for no fault that explains its error, whose
// ranks toRun maps to the run's.
func (r *run) judge(i int, op string, it int, e opEnd, toRun func(int) int) string {
	switch {
	case !e.ended:
		return fmt.Sprintf("rank %d: %s #%d never ended (virtual time %v)", i, op, it, r.loop.Elapsed())
	case e.err == nil:
		return ""
	case r.cfg.Survive:
		return fmt.Sprintf("rank %d: %s #%d failed under faults it must survive (faults: %q): %v", i, op, it, r.cfg.Faults, e.err)
	case !r.cfg.Faults.explains(e.err, r.net.connected, toRun):
		return fmt.Sprintf("rank %d: %s #%d failed, and no fault explains it (faults: %q): %v", i, op, it, r.cfg.Faults, e.err)
	}
	return ""
}

// result checks the invariants on what the run left.
func (r *run) result() *Result {
	res := &Result{
		Algorithm: r.cfg.Algorithm,
		SimTime:   r.last, Hash: r.trace.Hash(), Events: r.trace.Events(),
		Frames: r.net.frames, Bytes: r.net.bytes, Redials: r.net.redials, PeakConnections: r.net.peak, Ranks: make([]Outcome, r.cfg.Ranks),
	}
	if res.Algorithm == "" {
		res.Algorithm = "point_to_point"
		if r.cfg.Op != PointToPoint {
			res.Algorithm = algorithms.Select(r.data.spec(0))
		}
	}
	for i := range r.cfg.Ranks {
		o := &res.Ranks[i]
		o.Crashed = r.net.crashed[i]
		for it, e := range r.ends[i] {
			switch {
			case !e.ended:
				o.Pending++
			case e.err != nil:
				if o.Err == nil {
					o.Err = e.err
				}
			default:
				o.Completed++
			}
			if o.Crashed {
				continue // a crashed rank's operations may end any way
			}
			if v := r.judge(i, r.cfg.opName(), it, e, sameRank); v != "" {
				res.Violations = append(res.Violations, v)
			}
		}
	}
	for i, e := range r.windowEnds {
		if r.net.crashed[i] {
			continue
		}
		if e.ended && e.err == nil {
			res.Windows++
		}
		if v := r.judge(i, "window put-signal", 0, e, sameRank); v != "" {
			res.Violations = append(res.Violations, v)
		}
	}
	res.Violations = append(res.Violations, r.wrong...)
	r.agreement(res)
	if r.shrunk != nil {
		r.shrunk.outcome(res)
	}
	return res
}
