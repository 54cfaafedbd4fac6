package devcomm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// Backend runs operations on tensors of one GPU: those the ranks of one
// host can run from each other's device memory through a DeviceGroup,
// the others staged through host, a backend of host memory. It is
// a backend.Backend, an Allocator of device tensors, and, where host is,
// FaultTolerant.
type Backend struct {
	host  backend.Backend
	dev   tensor.Device
	ctx   *cuda.Context
	s     *cuda.Stream // the communicator's: every operation's work, in issue order
	group *DeviceGroup // nil where the ranks are not all of this host
	// probe reads the group's flags into flags beside a stalled stream:
	// made beforehand, as freeing memory waits for the device.
	probe *cuda.Stream
	flags *cuda.HostMemory
	pool  pinned
	chunk int // staged operations larger than this are cut into pieces of it

	mu      sync.Mutex // guards what follows
	events  []*cuda.Event
	aborted error
	hosted  int        // staged jobs the host has and has not ended
	settled *sync.Cond // signalled when hosted falls to 0

	groupOps, stagedOps atomic.Uint64 // operations queued each way
	pieces              atomic.Uint64 // pieces staged operations were cut into

	queue   queue // jobs in issue order, for the stream
	ending  queue // jobs whose work is queued or hosted, for their end
	live    sync.WaitGroup
	stopped chan struct{}
}

// New returns a backend that runs host's operations on tensors of dev,
// whose context is ctx. With a group, the collectives it can run go
// through it; the others are staged, in pieces of chunk bytes where they
// are larger (0: whole).
func New(host backend.Backend, dev tensor.Device, ctx *cuda.Context, group *DeviceGroup, chunk int) (*Backend, error) {
	s, err := ctx.NewStream()
	if err != nil {
		return nil, err
	}
	b := &Backend{host: host, dev: dev, ctx: ctx, s: s, group: group, pool: pinned{ctx: ctx}, chunk: chunk, stopped: make(chan struct{})}
	if group != nil {
		if b.probe, err = ctx.NewNonBlockingStream(); err != nil {
			return nil, errors.Join(err, s.Close())
		}
		if b.flags, err = ctx.AllocHost(8 * group.Size()); err != nil {
			return nil, errors.Join(err, b.probe.Close(), s.Close())
		}
	}
	b.settled = sync.NewCond(&b.mu)
	b.queue.init()
	b.ending.init()
	go b.enqueue()
	go b.end()
	return b, nil
}

// job is one operation on its way through.
type job struct {
	b     *Backend
	op    *backend.Op
	done  backend.Completion
	after *cuda.Event // recorded on the caller's stream at issue; nil without one
	end   *cuda.Event // after the job's work on the communicator's stream
	group bool        // runs through the device group, not staged
	last  uint64      // a group job's last barrier
	start time.Time   // when its work was queued: its timeout counts from then
	err   error       // why it ended, once it has

	// Staged jobs only.
	m      mirror
	buf    *cuda.HostMemory // nil for an operation without device bytes
	pieces *pieces          // the operation this job is a piece of

	mu       sync.Mutex
	cancel   func(error) // the host's, once a staged job is issued
	canceled error       // a cancel before anything had it
}

func (b *Backend) Name() string { return b.host.Name() }

// GroupOps counts the operations that ran from the device memory of the
// host's ranks, StagedOps those staged through host memory.
func (b *Backend) GroupOps() uint64  { return b.groupOps.Load() }
func (b *Backend) StagedOps() uint64 { return b.stagedOps.Load() }

// StagedPieces counts the pieces large staged operations were cut into.
func (b *Backend) StagedPieces() uint64 { return b.pieces.Load() }

// Issue places op after the work queued on the caller's stream so far and
// hands it on in issue order: the caller's goroutine only records an
// event.
func (b *Backend) Issue(op *backend.Op, done backend.Completion) func(error) {
	j := &job{b: b, op: op, done: done, group: b.grouped(op)}
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.aborted
	if err == nil && op.Stream != nil {
		if j.after, err = b.event(); err == nil {
			err = j.after.Record(op.Stream)
		}
	}
	if err != nil {
		b.releaseLocked(j)
		done.Finished(err)
		return nil
	}
	b.live.Add(1)
	b.queue.push(j)
	return j.cancelWith
}

func (j *job) cancelWith(err error) {
	j.mu.Lock()
	cancel := j.cancel
	if cancel == nil && j.canceled == nil {
		j.canceled = err
	}
	j.mu.Unlock()
	if cancel != nil {
		cancel(err)
	}
}

// enqueue queues each job's work on the stream, in issue order. A staged
// job's downloads wait for the staged jobs before it to end, whose
// uploads it may read.
func (b *Backend) enqueue() {
	for {
		j, ok := b.queue.pop(b.stopped)
		if !ok {
			return
		}
		b.mu.Lock()
		for b.hosted > 0 && b.aborted == nil {
			b.settled.Wait()
		}
		err := b.aborted
		b.mu.Unlock()
		j.mu.Lock()
		err = cmp.Or(err, j.canceled)
		if err == nil {
			j.cancel = func(error) {} // from now on the job runs to its end
		}
		j.mu.Unlock()
		if err == nil {
			if j.group {
				b.groupOps.Add(1)
				err = b.runGroup(j)
			} else {
				b.stagedOps.Add(1)
				err = b.stage(j)
			}
		}
		if err != nil {
			j.err = err
			b.ending.push(j)
		}
	}
}

// end ends each job once the device has done its work: a staged job's
// uploads once the host ended it, a group job's work once queued.
func (b *Backend) end() {
	for {
		j, ok := b.ending.pop(b.stopped)
		if !ok {
			return
		}
		err := j.err
		if err == nil && !j.group {
			err = b.upload(j)
		}
		if err == nil {
			err = b.await(j)
		}
		if !j.group && j.start != (time.Time{}) {
			b.mu.Lock()
			if b.hosted--; b.hosted == 0 {
				b.settled.Broadcast()
			}
			b.mu.Unlock()
		}
		b.release(j)
		if ps := j.pieces; ps != nil {
			ps.err = cmp.Or(ps.err, err)
			if ps.left--; ps.left > 0 {
				continue
			}
			j, err = ps.j, ps.err
			b.release(j)
		}
		j.done.Finished(err)
		b.live.Done()
	}
}

// await waits for the device to reach j's end, telling its Completion
// where that is first. A group job that passes its timeout has a peer
// that never reached its barrier, or a stalled device: its stream can
// run nothing more, so the communicator is aborted.
func (b *Backend) await(j *job) error {
	if q, ok := j.done.(backend.Queued); ok && j.pieces == nil {
		q.Queued(j.end)
	}
	deadline := time.Time{}
	if j.group && j.op.Timeout > 0 {
		deadline = j.start.Add(j.op.Timeout)
	}
	if err := await(j.end, deadline); err != errTimedOut {
		return err
	}
	err := fmt.Errorf("%w: %s #%d waited %v on the device: %s", commerr.ErrTimeout, j.op.Name, j.op.Seq, j.op.Timeout, b.stuck(j))
	b.Abort(err)
	return err
}

// stuck says which ranks a group job whose stream stalled waits for, as
// the flag words of this rank's region tell, read on a stream of their
// own that the stall does not hold up.
func (b *Backend) stuck(j *job) string {
	reached, err := b.readFlags()
	if err != nil {
		return fmt.Sprintf("reading which ranks it waits for failed: %v", err)
	}
	var behind []int
	for q, n := range reached {
		if n < j.last {
			behind = append(behind, q)
		}
	}
	if len(behind) == 0 {
		return "every rank reached its barriers: the GPU stalled"
	}
	return fmt.Sprintf("ranks %v never reached its barrier %d (the last each reached: %v)", behind, j.last, reached)
}

func (b *Backend) readFlags() ([]uint64, error) { return b.group.Reached(b.probe, b.flags.Bytes()) }

var errTimedOut = errors.New("timed out")

// await waits for the device to reach e, or until deadline if it is set,
// querying rather than synchronizing: a synchronize holds the context's
// lock for reading all the while, which would hold up every allocation
// meanwhile. It polls while a small operation's work may end, then sleeps
// between polls.
func await(e *cuda.Event, deadline time.Time) error {
	pause := time.Microsecond
	for polls := 0; ; polls++ {
		ok, err := e.Query()
		if ok || err != nil {
			return err
		}
		if polls < spinPolls {
			runtime.Gosched()
			continue
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return errTimedOut
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Microsecond)
	}
}

// spinPolls is how many times await polls before it sleeps.
const spinPolls = 100

// waitCaller makes the stream wait for what j's caller queued before it.
func (b *Backend) waitCaller(j *job) error {
	if j.after == nil {
		return nil
	}
	return b.s.Wait(j.after)
}

// release gives j's pinned memory and events back.
func (b *Backend) release(j *job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(j)
}

func (b *Backend) releaseLocked(j *job) {
	if j.buf != nil {
		b.pool.put(j.buf)
		j.buf = nil
	}
	for _, e := range []**cuda.Event{&j.after, &j.end} {
		if *e != nil {
			b.events = append(b.events, *e)
			*e = nil
		}
	}
}

// event returns an event for a job, reused from an earlier one; b.mu
// held.
func (b *Backend) event() (*cuda.Event, error) {
	if n := len(b.events); n > 0 {
		e := b.events[n-1]
		b.events = b.events[:n-1]
		return e, nil
	}
	return b.ctx.NewEvent()
}

// record records a new event of j's end on the stream.
func (b *Backend) record(j *job) error {
	b.mu.Lock()
	e, err := b.event()
	b.mu.Unlock()
	if err != nil {
		return err
	}
	j.end = e
	return e.Record(b.s)
}

// Split splits the host backend; the new communicator's operations are
// staged, on the same device.
func (b *Backend) Split(ctx context.Context, group []int, cfg *backend.Config, exchange backend.Exchange) (backend.Backend, error) {
	hostCfg := *cfg
	hostCfg.Device = tensor.CPU
	h, err := b.host.Split(ctx, group, &hostCfg, exchange)
	if err != nil || h == nil {
		return nil, err
	}
	return New(h, b.dev, b.ctx, nil, b.chunk)
}

// Abort aborts the host backend and fails the operations it does not
// have yet with err.
func (b *Backend) Abort(err error) {
	b.mu.Lock()
	if b.aborted == nil {
		b.aborted = err
	}
	b.settled.Broadcast()
	b.mu.Unlock()
	b.host.Abort(err)
}

// Finalize waits for the operations issued, finalizes the host backend,
// and frees the stream, events, pinned memory and device group. After an
// abort, a group's stream may be stalled on a barrier that will never
// pass, and freeing waits for the device: the device objects are left to
// the process's end.
func (b *Backend) Finalize(ctx context.Context) error {
	drained := make(chan struct{})
	go func() {
		b.live.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	b.mu.Lock()
	stalled := b.aborted != nil && b.group != nil // only barriers stall
	b.mu.Unlock()
	var errs []error
	if b.group != nil && !stalled {
		// Every rank's last barrier must pass before the regions go.
		errs = append(errs, b.group.Barrier(b.s), b.s.Synchronize(), b.group.Close(), b.probe.Close(), b.flags.Close())
	}
	errs = append(errs, b.host.Finalize(ctx))
	close(b.stopped)
	if stalled {
		return errors.Join(errs...)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	errs = append(errs, b.s.Close(), b.pool.close())
	for _, e := range b.events {
		errs = append(errs, e.Close())
	}
	b.events = nil
	return errors.Join(errs...)
}

// Agree runs the host backend's agreement.
func (b *Backend) Agree(flags uint64, done func(uint64, []int, error)) {
	ft, ok := b.host.(backend.FaultTolerant)
	if !ok {
		done(0, nil, commerr.Invalid("the %s backend cannot agree", b.host.Name()))
		return
	}
	ft.Agree(flags, done)
}

// Revoke revokes the host backend.
func (b *Backend) Revoke() {
	if ft, ok := b.host.(backend.FaultTolerant); ok {
		ft.Revoke()
	}
}

// Alloc returns a zeroed tensor in memory of the device.
func (b *Backend) Alloc(dt tensor.DType, shape []int) (*tensor.Tensor, error) {
	meta, err := tensor.NewMeta(dt, shape...)
	if err != nil {
		return nil, commerr.Invalid("%v", err)
	}
	mem, err := b.ctx.Alloc(meta.NBytes())
	if err != nil {
		return nil, err
	}
	if err := b.ctx.Memset(mem, 0, mem.Len(), 0); err != nil {
		return nil, errors.Join(err, mem.Close())
	}
	return tensor.OnDevice(b.dev, mem, 0, dt, shape...)
}

// Free frees a tensor Alloc returned.
func (b *Backend) Free(t *tensor.Tensor) error {
	mem, off := t.Memory()
	dm, ok := mem.(*cuda.DeviceMemory)
	if !ok || off != 0 || t.NBytes() != dm.Len() {
		return commerr.Invalid("%v was not made by Alloc", t)
	}
	return dm.Close()
}
