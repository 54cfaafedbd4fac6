package gocomms

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/flight"
	"github.com/gocomms/gocomms/metrics"
)

// opIDs numbers operations process-wide, as torchcomms' op_id.
var opIDs atomic.Uint64

// Comm is one rank's handle on a communicator. Its methods are safe for
// concurrent use; operations start in the order their calls were issued.
type Comm struct {
	cfg         *Config // the backend's, which it shares
	backendName string
	backend     Backend
	pooled      backend.Pooled  // the backend, if it issues into kept rooms
	spinner     backend.Spinner // the backend, if a blocking call spins on its operation
	ownsRuntime bool
	exit        func(code int)
	logger      *slog.Logger // WithLogger's: the communicators made from this one tag their own
	ranks       []int        // global rank of each member; nil: its own rank
	// membership is what the init handles of its members say they come
	// from: the id of the Reconfigure that made it, else its name, which
	// every member shares and no other communicator has.
	membership string
	// family is the name NewComm was given, which the communicators made
	// from this one keep: Reconfigure names its communicator so, the same
	// on every member however each got there.
	family string
	quorum []int // the ranks Reconfigure found in the quorum
	checks bool  // WithCollectiveChecks: collectives first compare calls

	mu        sync.Mutex // orders issue: sequence numbers and submission
	seq       uint64
	splits    int
	shrinks   int
	windows   uint64 // windows made, which numbers the next
	finalized bool
	aborted   atomic.Bool
	abortCh   chan struct{} // closed by Abort: unblocks splits in progress
	timeout   atomic.Int64

	hooksMu    sync.Mutex
	preHooks   hookSet[PreHook]
	issueHooks hookSet[IssueHook]
	abortHooks hookSet[AbortHook]

	failMu   sync.Mutex
	failures []error

	recMu   sync.Mutex
	records freeList[*opRecord] // for blocking calls over one tensor
	// rooms are free rooms of the Pooled backend, which async calls'
	// records take and give back once the backend let go of them: their
	// records live on with the Work the caller holds.
	rooms freeList[backend.Room]

	flight  *FlightRecorder
	files   flight.Files
	metrics *metrics.Comm // nil without WithMetrics
}

// NewComm creates a communicator, collectively with the other ranks, and
// returns once every resource is ready. Rank and size come from options.
func NewComm(ctx context.Context, backend string, device Device, name string, opts ...Option) (*Comm, error) {
	factory, err := lookupBackend(backend)
	if err != nil {
		return nil, err
	}
	o, err := resolve(name, device, opts)
	if err != nil {
		return nil, err
	}
	owns := o.cfg.Runtime == nil
	if owns {
		o.cfg.Runtime = actors.NewRuntime(o.logger)
	}
	b, err := factory(ctx, &o.cfg)
	if err != nil {
		if owns {
			runtimeOf(&o.cfg).Shutdown()
		}
		return nil, fmt.Errorf("gocomms: new communicator %q on rank %d: %w", name, o.cfg.Rank, err)
	}
	if _, ok := b.(Reconfigurable); o.cfg.Dynamic && !ok {
		b.Finalize(ctx)
		if owns {
			runtimeOf(&o.cfg).Shutdown()
		}
		return nil, fmt.Errorf("gocomms: new communicator %q: %w", name, commerr.Invalid("backend %q cannot reconfigure", backend))
	}
	return newComm(o, backend, b, owns, nil, name), nil
}

func newComm(o *options, backendName string, b Backend, owns bool, ranks []int, family string) *Comm {
	c := &Comm{cfg: &o.cfg, backendName: backendName, backend: b, ownsRuntime: owns, exit: o.exit, logger: o.logger, ranks: ranks,
		membership: o.cfg.Name, family: family, abortCh: make(chan struct{})}
	c.checks = o.checks
	c.pooled, _ = b.(backend.Pooled)
	c.spinner, _ = b.(backend.Spinner)
	c.timeout.Store(int64(o.cfg.Timeout))
	c.startFlightRecorder()
	if o.metrics != nil {
		c.metrics = o.metrics.Comm(o.cfg.Name, o.cfg.Rank)
	}
	return c
}

// Rank returns this rank.
func (c *Comm) Rank() int { return c.cfg.Rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.cfg.Size }

// Name returns the communicator's name.
func (c *Comm) Name() string { return c.cfg.Name }

// Device returns the device of the communicator's tensors.
func (c *Comm) Device() Device { return c.cfg.Device }

// Backend returns the backend's registered name.
func (c *Comm) Backend() string { return c.backendName }

// Ranks returns the global rank (in the communicator NewComm created) of
// every member, indexed by rank in this communicator.
func (c *Comm) Ranks() []int {
	if c.ranks == nil {
		return identity(c.cfg.Size)
	}
	return append([]int(nil), c.ranks...)
}

// globalRank is the global rank of this communicator's rank r.
func (c *Comm) globalRank(r int) int {
	if c.ranks == nil {
		return r
	}
	return c.ranks[r]
}

// UnsafeBackend returns the backend, for prototyping: nothing about it is
// stable, and issuing through it bypasses hooks and validation.
func (c *Comm) UnsafeBackend() Backend { return c.backend }

// SetTimeout sets the default timeout of later operations.
func (c *Comm) SetTimeout(d time.Duration) error {
	if d <= 0 {
		return commerr.Invalid("timeout must be positive, got %v", d)
	}
	c.timeout.Store(int64(d))
	return nil
}

// Timeout returns the default per-operation timeout.
func (c *Comm) Timeout() time.Duration { return time.Duration(c.timeout.Load()) }

// RegisterPreHook adds a hook run before every operation; the returned
// function removes it.
func (c *Comm) RegisterPreHook(h PreHook) (remove func()) {
	return register(c, &c.preHooks, h)
}

// RegisterIssueHook adds a hook run once every operation is issued, with
// the Work that follows it; the returned function removes it.
func (c *Comm) RegisterIssueHook(h IssueHook) (remove func()) {
	return register(c, &c.issueHooks, h)
}

// RegisterAbortHook adds a hook run when the communicator aborts.
func (c *Comm) RegisterAbortHook(h AbortHook) (remove func()) {
	return register(c, &c.abortHooks, h)
}

func register[F any](c *Comm, set *hookSet[F], f F) func() {
	c.hooksMu.Lock()
	defer c.hooksMu.Unlock()
	id := set.add(f)
	return func() {
		c.hooksMu.Lock()
		defer c.hooksMu.Unlock()
		set.remove(id)
	}
}

func hooks[F any](c *Comm, set *hookSet[F]) []F {
	c.hooksMu.Lock()
	defer c.hooksMu.Unlock()
	return set.list()
}

// Abort fails every pending operation with ErrAborted, runs the abort hooks
// and closes the communicator's connections. It does not block; peers see
// their operations with this rank fail.
func (c *Comm) Abort(cause error) {
	if !c.aborted.CompareAndSwap(false, true) {
		return
	}
	close(c.abortCh)
	err := fmt.Errorf("%w: %v", ErrAborted, cause)
	if cause == nil {
		err = ErrAborted
	}
	for _, h := range hooks(c, &c.abortHooks) {
		h(err)
	}
	c.dumpFlightRecordFile(flight.OnAbort)
	c.backend.Abort(err)
}

// IsAborted reports whether Abort was called.
func (c *Comm) IsAborted() bool { return c.aborted.Load() }

// Finalize waits for every issued operation to end, releases the
// communicator, and reports the operations that failed. Any later call,
// Finalize included, fails with ErrFinalized.
func (c *Comm) Finalize(ctx context.Context) (err error) {
	op := &Op{Name: OpFinalize, Root: -1}
	end, err := c.observe(op)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	c.mu.Lock()
	op.Seq = c.seq
	if c.finalized {
		c.mu.Unlock()
		return c.opError(op, ErrFinalized)
	}
	c.finalized = true
	c.mu.Unlock()
	err = c.backend.Finalize(ctx)
	c.files.Await()
	liveComms.Remove(c) // from DumpFlightRecords
	if c.ownsRuntime {
		runtimeOf(c.cfg).Shutdown()
	}
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if len(c.failures) > 0 {
		err = errors.Join(append([]error{fmt.Errorf("gocomms: finalize %q: %d operations failed", c.cfg.Name, len(c.failures))}, c.failures...)...)
	}
	return err
}

func (c *Comm) opError(op *Op, err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	return &OpError{Comm: c.cfg.Name, Op: string(op.Name), Seq: op.Seq, Rank: c.cfg.Rank, Err: err}
}

// run issues op and waits for it: the blocking form of every operation.
// ctx bounds the operation, and its cancellation cancels the operation on
// every rank.
func (c *Comm) run(ctx context.Context, op *Op, invalid error, opts []CallOption) error {
	return c.issue(ctx, op, invalid, opts, nil, false).wait(ctx)
}

// start issues op and returns its Work: the async form of every operation.
func (c *Comm) start(op *Op, invalid error, opts []CallOption) *Work {
	return c.issue(context.Background(), op, invalid, opts, nil, false)
}

// runRecord is run for the operation in r, which it gives back for reuse
// if nobody else saw it.
func (c *Comm) runRecord(ctx context.Context, r *opRecord, invalid error, opts []CallOption) error {
	w := c.issue(ctx, &r.op.Op, invalid, opts, r, true)
	err := w.wait(ctx)
	if w.pooled {
		r.release()
	}
	return err
}

// startRecord is start for the operation in r.
func (c *Comm) startRecord(r *opRecord, invalid error, opts []CallOption) *Work {
	return c.issue(context.Background(), &r.op.Op, invalid, opts, r, false)
}

// opRecord holds what a collective needs to issue it and wait for it, in
// one allocation: its Op, its Work and, for a Pooled backend, its room,
// plus the room for counts and the tensors' blocks that it keeps across
// uses. A blocking call that no hook saw gives it back to the
// communicator once both the call and the backend are done with it
// (holds), and the next call reuses it: a steady loop of such calls
// allocates nothing.
type opRecord struct {
	op    roomOp
	work  Work
	room  backend.Room // the Pooled backend's, made on first use
	comm  *Comm
	holds atomic.Int32 // of a pooled Work: the caller and the backend
}

// roomFor returns r's room for p: a free one of the communicator's, or
// one made, on first use; a new one without r.
func (r *opRecord) roomFor(p backend.Pooled) backend.Room {
	if r == nil {
		return p.NewRoom()
	}
	if r.room == nil {
		c := r.comm
		c.recMu.Lock()
		room, ok := c.rooms.take()
		c.recMu.Unlock()
		if !ok {
			room = p.NewRoom()
		}
		r.room = room
	}
	return r.room
}

// giveRoom gives the communicator r's room, which the backend let go of,
// for another record: r's Work, which the caller may hold on to, keeps
// the record.
func (r *opRecord) giveRoom() {
	room := r.room
	if room == nil {
		return
	}
	r.room = nil
	room.Clear()
	c := r.comm
	c.recMu.Lock()
	c.rooms.give(room, roomsKept)
	c.recMu.Unlock()
}

// roomsKept bounds the free rooms a communicator keeps: as many as async
// calls a loop keeps in flight, within reason.
const roomsKept = 64

// recordsKept bounds the free records a communicator keeps: one per
// goroutine calling at once.
const recordsKept = 16

// record returns a record to fill, free or new.
func (c *Comm) record() *opRecord {
	c.recMu.Lock()
	r, ok := c.records.take()
	c.recMu.Unlock()
	if ok {
		return r
	}
	r = &opRecord{comm: c}
	r.work.rec = r
	return r
}

// release drops one hold of a pooled record; the last gives it back,
// cleared so that it keeps no tensor alive.
func (r *opRecord) release() {
	if r.holds.Add(-1) != 0 {
		return
	}
	r.op.clear()
	if r.room != nil {
		r.room.Clear()
	}
	r.work.clear()
	c := r.comm
	c.recMu.Lock()
	c.records.give(r, recordsKept)
	c.recMu.Unlock()
}

// freeList keeps things for reuse, up to a bound; its owner's lock
// guards it.
type freeList[T any] []T

// take returns the last thing given, if any.
func (l *freeList[T]) take() (T, bool) {
	var zero T
	n := len(*l)
	if n == 0 {
		return zero, false
	}
	v := (*l)[n-1]
	(*l)[n-1] = zero
	*l = (*l)[:n-1]
	return v, true
}

// give keeps v, unless keep things are kept already.
func (l *freeList[T]) give(v T, keep int) {
	if len(*l) < keep {
		*l = append(*l, v)
	}
}

// issue numbers op and hands it to the backend. With r, op is r's, and
// so are the Work and the backend's room; a blocking call's Work is
// pooled if nothing but the communicator and the backend will hold it:
// the backend is Pooled, and no hook sees it.
func (c *Comm) issue(ctx context.Context, op *Op, invalid error, opts []CallOption, r *opRecord, blocking bool) *Work {
	cc := callOf(opts)
	hooked, invalid := c.prepare(ctx, op, invalid, cc, blocking)

	c.mu.Lock()
	op.Seq = c.seq
	if c.cfg.Size == 0 {
		invalid = fmt.Errorf("%w: call Reconfigure first", ErrNotInitialized)
	}
	if c.finalized {
		invalid = ErrFinalized
	}
	if invalid != nil {
		c.mu.Unlock()
		return c.reject(op, invalid, cc.internal)
	}
	c.seq++
	var post []IssueHook
	if !cc.internal {
		post = hooks(c, &c.issueHooks)
	}
	w := c.workFor(op, r, blocking && !hooked && len(post) == 0)
	if !cc.internal {
		c.flight.track(op, w)
		if c.metrics != nil {
			w.metered = time.Now()
			c.metrics.Issued()
		}
	}
	c.handOver(op, w, r)
	c.mu.Unlock()

	for _, h := range post {
		h(op, w)
	}
	return w
}

// prepare numbers op and sets what the call says of it, then runs the
// pre-issue hooks and the checks, unless the communicator issues it. It
// reports whether a hook saw op, and why op is invalid: invalid, or what
// the call, ctx, a hook or the checks find wrong.
func (c *Comm) prepare(ctx context.Context, op *Op, invalid error, cc call, blocking bool) (bool, error) {
	op.ID = opIDs.Add(1)
	op.Timeout = c.Timeout()
	if cc.timeout > 0 {
		op.Timeout = cc.timeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < op.Timeout {
		op.Timeout = max(time.Until(dl), time.Nanosecond)
	}
	op.Hints = cc.hints
	op.Stream = cc.stream
	op.Blocking = blocking
	if invalid == nil && cc.timeout < 0 {
		invalid = commerr.Invalid("negative timeout %v", cc.timeout)
	}
	if invalid == nil && ctx.Err() != nil {
		invalid = context.Cause(ctx)
	}
	hooked := false
	if invalid == nil && !cc.internal {
		pre := hooks(c, &c.preHooks)
		hooked = len(pre) > 0
		for _, h := range pre {
			if invalid = h(op); invalid != nil {
				break
			}
		}
	}
	if invalid == nil && c.checks && !cc.internal && op.Kind != 0 {
		invalid = c.checkCall(ctx, op)
	}
	return hooked, invalid
}

// reject ends op at once with err; unless the communicator issued it, the
// flight recorder and the metrics count it rejected.
func (c *Comm) reject(op *Op, err error, internal bool) *Work {
	w := endedWork(op, c.opError(op, err))
	if !internal {
		c.flight.recordRejected(op, w)
		if c.metrics != nil {
			c.metrics.Rejected(string(op.Name), w.err)
		}
	}
	return w
}

// workFor returns op's Work: a new one without r, else r's, pooled if
// the backend is Pooled and poolable says only the communicator and the
// backend will hold it.
func (c *Comm) workFor(op *Op, r *opRecord, poolable bool) *Work {
	if r == nil {
		return newWork(op, c)
	}
	w := &r.work
	w.op, w.comm = op, c
	if w.pooled = poolable && c.pooled != nil; w.pooled {
		r.holds.Store(2)
		if w.wake == nil {
			w.wake = make(chan struct{}, 1)
		}
	}
	return w
}

// handOver hands op, of Work w (and of r, if set), to the backend, w
// issuing meanwhile.
func (c *Comm) handOver(op *Op, w *Work, r *opRecord) {
	w.issuing.Store(true)
	if c.pooled != nil {
		if c.pooled.IssueIn(op, completion{w}, r.roomFor(c.pooled)) {
			w.canceler = c.pooled
		} else if w.pooled {
			r.release() // the backend never held it
		}
	} else {
		w.cancel = c.backend.Issue(op, completion{w})
	}
	w.issuing.Store(false)
}

// callOf applies opts. The call escapes to the options, so it is made on
// the heap only when there are some.
func callOf(opts []CallOption) call {
	if len(opts) == 0 {
		return call{}
	}
	cc := new(call)
	for _, o := range opts {
		o(cc)
	}
	return *cc
}

// ended records a failed operation for Finalize and, when configured,
// aborts the process as torchcomms does.
func (c *Comm) ended(w *Work) {
	if !w.metered.IsZero() {
		c.metrics.Ended(string(w.op.Name), opBytes(w.op), time.Since(w.metered), w.err)
	}
	if w.err == nil {
		return
	}
	c.failMu.Lock()
	c.failures = append(c.failures, w.err)
	c.failMu.Unlock()
	if errors.Is(w.err, ErrTimeout) {
		c.dumpFlightRecordFile(flight.OnTimeout)
	}
	if c.cfg.AbortProcessOnError && !errors.Is(w.err, context.Canceled) {
		c.cfg.Logger.Error("aborting process after a failed operation", "err", w.err)
		for _, h := range hooks(c, &c.abortHooks) {
			h(w.err)
		}
		c.dumpFlightRecordFile(flight.OnAbort)
		c.files.Await()
		c.exit(134)
	}
}

// identity is the ranks 0 to n-1, in order.
func identity(n int) []int {
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// await starts an async form and waits for what it hands done, or for ctx
// to end (ended false); a result that comes after that goes to late, if
// set, so that what it holds is not left to nobody.
func await[T any](ctx context.Context, start func(done func(T, error)), late func(T)) (v T, ended bool, err error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	start(func(v T, err error) { ch <- result{v, err} })
	select {
	case r := <-ch:
		return r.v, true, r.err
	case <-ctx.Done():
		if late != nil {
			go func() {
				if r := <-ch; r.err == nil {
					late(r.v)
				}
			}()
		}
		return v, false, nil
	}
}
