package gocomms

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/flight"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/internal/names"
)

// WorkStatus is where an operation stands, as torchcomms' WorkStatus.
type WorkStatus int32

const (
	NotStarted WorkStatus = iota
	InProgress
	Completed
	TimedOut
	Failed
)

var workStatusNames = [...]string{NotStarted: "not_started", InProgress: "in_progress", Completed: "completed", TimedOut: "timed_out", Failed: "error"}

func (s WorkStatus) String() string { return names.Else(s, workStatusNames[:], "unknown") }

// Work is an operation in flight. Dropping a Work without waiting is fine:
// the operation still completes and nothing leaks. A Work's tensors belong
// to the operation until it is done.
type Work struct {
	op     *Op
	status atomic.Int32
	err    error // set before status turns final
	cancel func(error)
	// canceler cancels by sequence number instead, for a backend that
	// can, which then makes no cancel function per operation.
	canceler backend.Canceler
	comm     *Comm // whose bookkeeping the end goes through; nil for a window's
	// flight is the communicator's recorder, which keeps this operation in
	// flightSlot: told directly rather than through hooks, which would cost
	// closures per operation.
	flight     *flight.Recorder
	flightSlot uint64
	// issuing is set while the backend takes the operation: one that
	// starts meanwhile (off the actors) started when it was issued.
	issuing atomic.Bool
	// metered is when the operation was issued, if the communicator
	// records metrics; zero otherwise.
	metered time.Time

	mu      sync.Mutex    // guards done, hooks, queued and the two phases below
	done    chan struct{} // closed once ended; made when first asked for
	queued  chan struct{} // closed once end is set or the Work ended; made when first asked for
	end     *cuda.Event   // recorded after the operation's work on a GPU stream
	hooks   hookSet[workHook]
	started bool
	ended   bool

	// A pooled Work is a blocking call's that nobody else sees (no hooks):
	// the call waits for wake's token, which finish sends once it no
	// longer touches the Work, and then gives rec back for reuse.
	pooled bool
	rec    *opRecord
	wake   chan struct{}
}

// workHook is a hook of a Work and the phase it runs in: one set holds
// the four phases', as a simulation keeps a Work for every rank.
type workHook struct {
	phase workPhase
	f     func(*Work)
}

type workPhase uint8

const (
	onStart workPhase = iota
	onWaitBegin
	onWaitEnd
	onEnd
)

func newWork(op *Op, comm *Comm) *Work {
	return &Work{op: op, comm: comm}
}

// closedDone is Done's channel for a Work that ended before anyone asked.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// clear empties a pooled Work for its next operation, keeping its record
// and wake, which is empty again.
func (w *Work) clear() {
	w.op, w.err, w.cancel, w.canceler, w.comm = nil, nil, nil, nil, nil
	w.flight, w.flightSlot, w.metered = nil, 0, time.Time{}
	w.status.Store(int32(NotStarted))
	w.done, w.hooks, w.started, w.ended, w.pooled = nil, hookSet[workHook]{}, false, false, false
	w.queued, w.end = nil, nil
}

// endedWork returns a Work that ended, with err, before it was issued:
// refused, or done at once by the caller (a direct put).
func endedWork(op *Op, err error) *Work {
	w := newWork(op, nil)
	w.finish(err)
	return w
}

// Op returns the operation.
func (w *Work) Op() *Op { return w.op }

// Status returns the current status.
func (w *Work) Status() WorkStatus { return WorkStatus(w.status.Load()) }

// Done is closed when the operation has ended.
func (w *Work) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		if w.ended {
			return closedDone
		}
		w.done = make(chan struct{})
	}
	return w.done
}

// IsCompleted reports whether the operation ended successfully.
func (w *Work) IsCompleted() bool { return w.Status() == Completed }

// Err returns the operation's error once it has ended, nil before.
func (w *Work) Err() error {
	switch w.Status() {
	case Completed, TimedOut, Failed:
		return w.err
	}
	return nil
}

// Wait blocks until the operation ends or ctx is done, and returns the
// operation's error or ctx's. A ctx that ends first leaves the operation
// running; its tensors stay in use.
func (w *Work) Wait(ctx context.Context) error {
	w.runHooks(onWaitBegin)
	defer w.runHooks(onWaitEnd)
	w.spin()
	select {
	case <-w.Done():
		w.awaitFlightRecordFiles()
		return w.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// awaitFlightRecordFiles lets the flight-record file that a failed
// operation's timeout or abort started be written before its caller, who
// may exit on the error, goes on.
func (w *Work) awaitFlightRecordFiles() {
	if w.err != nil && w.comm != nil {
		w.comm.files.Await()
	}
}

// WaitStream makes s wait for the operation's work on the GPU without
// blocking the host, as torchcomms' work.wait() makes the current
// stream wait: once the backend has queued the operation (at once for
// one that only queues work), s's later work runs after it. For an
// operation that ended, or one on the CPU, it returns the operation's
// error at once; it blocks for one that must first pass through the host
// (staged), until that part is done, or ctx ends.
func (w *Work) WaitStream(ctx context.Context, s *cuda.Stream) error {
	w.mu.Lock()
	if w.queued == nil {
		w.queued = make(chan struct{})
		if w.end != nil || w.ended {
			close(w.queued)
		}
	}
	queued := w.queued
	w.mu.Unlock()
	select {
	case <-queued:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	w.mu.Lock()
	end, ended := w.end, w.ended
	w.mu.Unlock()
	if ended || end == nil {
		return w.Err()
	}
	return s.Wait(end)
}

// queue records the event after the operation's work on its stream.
func (w *Work) queue(end *cuda.Event) {
	w.mu.Lock()
	w.end = end
	if w.queued != nil && !w.ended {
		close(w.queued)
	}
	w.mu.Unlock()
}

// wait is the blocking forms' wait: a ctx that ends first cancels the
// operation on every rank, and the call returns once it has ended.
func (w *Work) wait(ctx context.Context) error {
	w.spin()
	var done <-chan struct{} = w.wake
	if !w.pooled {
		done = w.Done()
	}
	select {
	case <-done:
		w.awaitFlightRecordFiles()
		return w.err
	case <-ctx.Done():
	}
	switch {
	case w.cancel != nil:
		w.cancel(context.Cause(ctx))
	case w.canceler != nil:
		w.canceler.Cancel(w.op.Seq, context.Cause(ctx))
	}
	<-done
	w.awaitFlightRecordFiles()
	return w.err
}

// spin lets the backend wait for the operation on this goroutine a
// short while before the caller parks (backend.Spinner).
func (w *Work) spin() {
	if c := w.comm; c != nil && c.spinner != nil && !w.IsCompleted() {
		c.spinner.Spin(w.op.Seq)
	}
}

// OnStart registers f to run when the operation starts running (at once if
// it already has). The returned function removes it.
func (w *Work) OnStart(f func(*Work)) (remove func()) {
	return w.register(f, onStart, func() bool { return w.started })
}

// OnEnd registers f to run once when the operation ends (at once if it
// already has).
func (w *Work) OnEnd(f func(*Work)) (remove func()) {
	return w.register(f, onEnd, func() bool { return w.ended })
}

// OnWaitBegin registers f to run when Wait is entered.
func (w *Work) OnWaitBegin(f func(*Work)) (remove func()) {
	return w.register(f, onWaitBegin, nil)
}

// OnWaitEnd registers f to run when Wait returns.
func (w *Work) OnWaitEnd(f func(*Work)) (remove func()) {
	return w.register(f, onWaitEnd, nil)
}

// register adds f to run in phase, or runs it at once if the phase
// (passed, checked under the lock) is already over.
func (w *Work) register(f func(*Work), phase workPhase, passed func() bool) func() {
	w.mu.Lock()
	if passed != nil && passed() {
		w.mu.Unlock()
		f(w)
		return func() {}
	}
	id := w.hooks.add(workHook{phase, f})
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.hooks.remove(id)
	}
}

func (w *Work) runHooks(phase workPhase) {
	w.mu.Lock()
	hs := w.hooks.list()
	w.mu.Unlock()
	for _, h := range hs {
		if h.phase == phase {
			h.f(w)
		}
	}
}

func (w *Work) start() {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return
	}
	w.started = true
	w.status.Store(int32(InProgress))
	w.mu.Unlock()
	if w.flight != nil {
		w.flight.Start(w.flightSlot, w.issuing.Load())
	}
	w.runHooks(onStart)
}

func (w *Work) finish(err error) {
	st := Completed
	switch {
	case errors.Is(err, ErrTimeout):
		st = TimedOut
	case err != nil:
		st = Failed
	}
	w.mu.Lock()
	w.err = err
	w.started, w.ended = true, true
	w.status.Store(int32(st))
	if w.done != nil {
		close(w.done)
	}
	if w.queued != nil && w.end == nil {
		close(w.queued)
	}
	w.end = nil // the backend may reuse it now
	w.mu.Unlock()
	if w.flight != nil {
		w.flight.End(w.flightSlot)
	}
	w.runHooks(onEnd)
	if w.comm != nil {
		w.comm.ended(w)
	}
	if w.pooled {
		w.wake <- struct{}{} // the last touch: the caller may reuse w now
	}
}

// completion adapts a Work to the Completion a backend sees, so that users
// cannot complete a Work themselves.
type completion struct{ w *Work }

func (c completion) Started() { c.w.start() }

// Finished ends the Work, with err made an *OpError naming the
// communicator, the operation and its number if the backend did not.
func (c completion) Finished(err error) {
	if err != nil && c.w.comm != nil {
		err = c.w.comm.opError(c.w.op, err)
	}
	c.w.finish(err)
}

// Queued is a backend's word that the operation's work is queued on a
// GPU stream before end (backend.Queued).
func (c completion) Queued(end *cuda.Event) { c.w.queue(end) }

// Released is a Pooled backend's word that it let go of the operation's
// room, which the Work's record holds: a pooled Work's record is free
// once its caller is done too; any other's room is free now.
func (c completion) Released() {
	switch {
	case c.w.pooled:
		c.w.rec.release()
	case c.w.rec != nil:
		c.w.rec.giveRoom()
	}
}
