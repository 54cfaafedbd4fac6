package stage

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// Backend runs operations on tensors of one GPU through host, a backend
// of host memory. It is a backend.Backend, an Allocator of device
// tensors, and, where host is, FaultTolerant.
type Backend struct {
	host backend.Backend
	dev  tensor.Device
	ctx  *cuda.Context
	s    *cuda.Stream // the communicator's: every copy, in issue order
	pool pinned

	mu      sync.Mutex // orders issues: stream work and the staging queue alike
	events  []*cuda.Event
	aborted error
	staging fifo // jobs waiting for their download, then for the host
	ending  fifo // jobs the host ended, waiting for their upload
	live    sync.WaitGroup
	stopped chan struct{}
}

// New returns a backend that runs host's operations on tensors of dev,
// whose context is ctx, staged through pinned host memory.
func New(host backend.Backend, dev tensor.Device, ctx *cuda.Context) (*Backend, error) {
	s, err := ctx.NewStream()
	if err != nil {
		return nil, err
	}
	b := &Backend{host: host, dev: dev, ctx: ctx, s: s, pool: pinned{ctx: ctx}, stopped: make(chan struct{})}
	b.staging.init()
	b.ending.init()
	go b.stage()
	go b.end()
	return b, nil
}

// job is one operation on its way through.
type job struct {
	b     *Backend
	op    *backend.Op
	done  backend.Completion
	m     mirror
	buf   *cuda.HostMemory // nil for an operation without device bytes
	ready *cuda.Event      // reached once the download is done
	err   error            // the host's end

	mu       sync.Mutex
	cancel   func(error) // the host's, once issued
	canceled error       // a cancel before the host had it
}

func (b *Backend) Name() string { return b.host.Name() }

// Issue stages op: its downloads are queued on the communicator's stream
// at once; the host gets it once they are done, after the operations
// issued before it.
func (b *Backend) Issue(op *backend.Op, done backend.Completion) func(error) {
	j := &job{b: b, op: op, done: done}
	b.mu.Lock()
	err := b.aborted
	if err == nil {
		err = b.prepare(j)
	}
	if err != nil {
		b.mu.Unlock()
		b.release(j)
		done.Finished(err)
		return nil
	}
	b.live.Add(1)
	b.staging.push(j)
	b.mu.Unlock()
	return j.cancelWith
}

// prepare mirrors j's tensors in pinned memory and queues their download
// after the caller's stream; b.mu held.
func (b *Backend) prepare(j *job) error {
	total, err := j.m.build(j.op)
	if err != nil {
		return commerr.Invalid("%v", err)
	}
	var buf []byte
	if total > 0 {
		if j.buf, err = b.pool.get(total); err != nil {
			return err
		}
		buf = j.buf.Bytes()
	}
	if err := j.m.place(j.op, buf); err != nil {
		return commerr.Invalid("%v", err)
	}
	if j.ready, err = b.event(); err != nil {
		return err
	}
	if j.op.Stream != nil {
		if err := j.ready.Record(j.op.Stream); err != nil {
			return err
		}
		if err := b.s.Wait(j.ready); err != nil {
			return err
		}
	}
	if err := j.m.download(b.s); err != nil {
		return err
	}
	return j.ready.Record(b.s)
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

// stage hands each job to the host once its download is done, in issue
// order.
func (b *Backend) stage() {
	for {
		j, ok := b.staging.pop(b.stopped)
		if !ok {
			return
		}
		err := await(j.ready)
		j.mu.Lock()
		if err == nil {
			err = j.canceled
		}
		b.mu.Lock()
		if err == nil {
			err = b.aborted
		}
		b.mu.Unlock()
		if err != nil {
			j.mu.Unlock()
			j.err = err
			b.ending.push(j)
			continue
		}
		j.cancel = func(error) {} // a cancel now waits for the host's
		j.mu.Unlock()
		cancel := b.host.Issue(&j.m.op, hostCompletion{j})
		j.mu.Lock()
		if cancel != nil {
			j.cancel = cancel
		}
		j.mu.Unlock()
	}
}

// hostCompletion passes the host's word on.
type hostCompletion struct{ j *job }

func (c hostCompletion) Started() { c.j.done.Started() }

func (c hostCompletion) Finished(err error) {
	c.j.err = err
	c.j.b.ending.push(c.j)
}

// end copies back what each operation wrote and ends it once the device
// has it.
func (b *Backend) end() {
	for {
		j, ok := b.ending.pop(b.stopped)
		if !ok {
			return
		}
		err := j.err
		if err == nil {
			err = b.upload(j)
		}
		b.release(j)
		j.done.Finished(err)
		b.live.Done()
	}
}

// upload queues j's copies back and waits for them, telling the
// operation's Completion where they end first.
func (b *Backend) upload(j *job) error {
	b.mu.Lock()
	err := j.m.upload(b.s)
	if err == nil {
		err = j.ready.Record(b.s)
	}
	b.mu.Unlock()
	if err != nil {
		return err
	}
	if q, ok := j.done.(backend.Queued); ok {
		q.Queued(j.ready)
	}
	return await(j.ready)
}

// release gives j's pinned memory and event back.
func (b *Backend) release(j *job) {
	if j.buf != nil {
		b.pool.put(j.buf)
		j.buf = nil
	}
	if j.ready != nil {
		b.mu.Lock()
		b.events = append(b.events, j.ready)
		b.mu.Unlock()
		j.ready = nil
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

// await waits for the device to reach e, querying rather than
// synchronizing: a synchronize holds the context's lock for reading all
// the while, which would hold up every allocation meanwhile. It polls
// while the copies of a small operation may end, then sleeps between
// polls.
func await(e *cuda.Event) error {
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
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Microsecond)
	}
}

// spinPolls is how many times await polls before it sleeps.
const spinPolls = 100

// Split splits the host backend and stages the new communicator's
// operations on the same device.
func (b *Backend) Split(ctx context.Context, group []int, cfg *backend.Config, exchange backend.Exchange) (backend.Backend, error) {
	hostCfg := *cfg
	hostCfg.Device = tensor.CPU
	h, err := b.host.Split(ctx, group, &hostCfg, exchange)
	if err != nil || h == nil {
		return nil, err
	}
	return New(h, b.dev, b.ctx)
}

// Abort aborts the host backend and fails the operations it does not
// have yet with err.
func (b *Backend) Abort(err error) {
	b.mu.Lock()
	if b.aborted == nil {
		b.aborted = err
	}
	b.mu.Unlock()
	b.host.Abort(err)
}

// Finalize waits for the operations issued, finalizes the host backend,
// and frees the stream, events and pinned memory.
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
	err := b.host.Finalize(ctx)
	close(b.stopped)
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := []error{err, b.s.Close(), b.pool.close()}
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
