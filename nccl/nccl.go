package nccl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"unsafe"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/internal/errkind"
	"github.com/gocomms/gocomms/tensor"
)

// Name is the backend's name for gocomms.NewComm.
const Name = "nccl"

// LibraryName is NCCL's soname, and the file's name in pip's wheel.
const LibraryName = "libnccl.so.2"

// idBytes is NCCL_UNIQUE_ID_BYTES, the size of an ncclUniqueId.
const idBytes = 128

var (
	// ErrUnavailable reports that NCCL cannot be used here: no
	// libnccl.so.2 loads (Locate), or this build cannot load it at all.
	// The error says which, and where it looked.
	ErrUnavailable = errors.New("nccl: NCCL unavailable")
	// ErrUnsupported reports an operation, dtype or reduction that NCCL
	// has no counterpart for. It matches commerr.ErrInvalidArgument.
	ErrUnsupported = errkind.Sentinel("nccl: not supported by the nccl backend", commerr.ErrInvalidArgument)
)

func init() {
	if err := gocomms.RegisterBackend(Name, New); err != nil {
		panic(err) // only a second registration of the name can fail
	}
}

// loadMu serializes loading: the C side binds its table of entry points
// once per process.
var loadMu sync.Mutex

func load(name string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	return sysLoad(name)
}

// Version loads NCCL (Locate) and returns its version, as "2.21.5".
func Version() (string, error) {
	f, err := Locate()
	return f.Version, err
}

// bindCUDA finds the CUDA driver's entry points NCCL's callers need, once
// gpu/cuda has loaded it.
func bindCUDA() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	return sysBindCUDA()
}

// ncclError is an NCCL call's failure.
type ncclError struct {
	op   string
	code int
	text string
}

// resultNames are ncclResult_t's names, by value.
var resultNames = []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

func (e *ncclError) Error() string {
	name := fmt.Sprintf("ncclResult %d", e.code)
	if e.code >= 0 && e.code < len(resultNames) {
		name = resultNames[e.code]
	}
	if e.text == "" {
		return fmt.Sprintf("nccl: %s: %s", e.op, name)
	}
	return fmt.Sprintf("nccl: %s: %s (%s)", e.op, e.text, name)
}

// New creates the NCCL communicator of cfg: rank 0 makes NCCL's unique id
// and puts it in cfg.Store, the others get it there, and every rank joins
// with ncclCommInitRank, which returns once all have.
func New(ctx context.Context, cfg *backend.Config) (backend.Backend, error) {
	switch {
	case cfg.Dynamic:
		return nil, fmt.Errorf("%w: reconfigure (WithReconfigure): NCCL communicators have fixed members", ErrUnsupported)
	case cfg.Device.Type != tensor.DeviceCUDA:
		return nil, commerr.Invalid("nccl: runs on cuda devices, not %v", cfg.Device)
	case cfg.Size > 1 && cfg.Store == nil:
		return nil, commerr.Invalid("nccl: %d ranks need a store to pass NCCL's unique id through", cfg.Size)
	}
	if _, err := Locate(); err != nil {
		return nil, err
	}
	cu, err := cuda.Shared(cfg.Device.Index)
	if err != nil {
		return nil, fmt.Errorf("nccl: %w", err)
	}
	if err := bindCUDA(); err != nil {
		return nil, err
	}
	id, err := uniqueID(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h, err := whileCtx(ctx, cu.Handle(), func() (unsafe.Pointer, error) {
		return sysInit(cu.Handle(), cfg.Size, cfg.Rank, id)
	})
	if err != nil {
		return nil, err
	}
	return start(cfg, cu, h)
}

// uniqueID passes rank 0's ncclUniqueId to the others through the store,
// under a key of the communicator's name.
func uniqueID(ctx context.Context, cfg *backend.Config) ([idBytes]byte, error) {
	var id [idBytes]byte
	if cfg.Size == 1 || cfg.Rank == 0 {
		id, err := sysUniqueID()
		if err != nil || cfg.Size == 1 {
			return id, err
		}
		return id, cfg.Store.Set(ctx, "nccl/"+cfg.Name+"/unique_id", id[:])
	}
	b, err := cfg.Store.Get(ctx, "nccl/"+cfg.Name+"/unique_id")
	if err != nil {
		return id, fmt.Errorf("nccl: waiting for rank 0's unique id: %w", err)
	}
	if len(b) != idBytes {
		return id, commerr.Invalid("nccl: the store holds a unique id of %d bytes, not %d", len(b), idBytes)
	}
	copy(id[:], b)
	return id, nil
}

// whileCtx runs make, which creates a communicator and may wait for the
// other ranks, until ctx ends: NCCL cannot be interrupted, so a
// communicator made after that is aborted.
func whileCtx(ctx context.Context, cu uintptr, create func() (unsafe.Pointer, error)) (unsafe.Pointer, error) {
	type made struct {
		h   unsafe.Pointer
		err error
	}
	ch := goResult(func() made { h, err := create(); return made{h, err} })
	select {
	case m := <-ch:
		return m.h, m.err
	case <-ctx.Done():
		go func() {
			if m := <-ch; m.err == nil && m.h != nil {
				_ = sysAbort(cu, m.h) // nobody holds it
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// goResult runs f on its own goroutine, and returns its result's channel.
func goResult[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// comm is one rank's NCCL communicator.
type comm struct {
	name       string
	rank, size int
	dev        tensor.Device
	ctx        *cuda.Context
	cu         uintptr      // ctx's CUcontext, which every call makes current
	stream     *cuda.Stream // where the communicator's work runs
	barrier    *cuda.DeviceMemory
	log        *slog.Logger

	// callMu is held for reading across each call that uses h, and for
	// writing to abort or destroy it, which NCCL does not allow during
	// another call.
	callMu sync.RWMutex
	h      unsafe.Pointer // ncclComm_t; nil once aborted or destroyed

	mu      sync.Mutex
	queue   []*job // issued and not finished, in order
	err     error  // once set, every operation fails with it
	closing bool   // Finalize has begun
	events  []*cuda.Event
	mems    map[*cuda.DeviceMemory]struct{} // Alloc's

	launchWake, watchWake chan struct{} // a token wakes the goroutine
	stop                  chan struct{} // closed by Finalize once idle
	goroutines            sync.WaitGroup
	unfinished            sync.WaitGroup
}

// start makes the backend of the NCCL communicator h.
func start(cfg *backend.Config, cu *cuda.Context, h unsafe.Pointer) (*comm, error) {
	c := &comm{name: cfg.Name, rank: cfg.Rank, size: cfg.Size, dev: cfg.Device, ctx: cu, cu: cu.Handle(),
		log: cfg.Logger, h: h, mems: map[*cuda.DeviceMemory]struct{}{},
		launchWake: make(chan struct{}, 1), watchWake: make(chan struct{}, 1), stop: make(chan struct{})}
	err := c.resources()
	if err != nil {
		c.release()
		_ = sysAbort(c.cu, h)
		return nil, err
	}
	c.goroutines.Add(2)
	go c.launcher()
	go c.watcher()
	return c, nil
}

// resources makes the stream and the barrier's byte.
func (c *comm) resources() error {
	var err error
	if c.stream, err = c.ctx.NewStream(); err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	if c.barrier, err = c.ctx.Alloc(1); err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	if err = c.ctx.Memset(c.barrier, 0, 1, 0); err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	return nil
}

// release closes what resources and the operations made.
func (c *comm) release() {
	for _, e := range c.events {
		_ = e.Close()
	}
	c.events = nil
	if c.barrier != nil {
		_ = c.barrier.Close()
	}
	if c.stream != nil {
		_ = c.stream.Close()
	}
}

func (c *comm) Name() string { return Name }

// Split makes the communicator of group with ncclCommSplit, which every
// rank of this one calls: a group's members pass its first parent rank as
// the color, unique to the group, and their new rank as the key.
func (c *comm) Split(ctx context.Context, group []int, cfg *backend.Config, _ backend.Exchange) (backend.Backend, error) {
	color, key := -1, 0 // NCCL_SPLIT_NOCOLOR: in no group
	if group != nil {
		color, key = group[0], slices.Index(group, c.rank)
	}
	type made struct {
		h   unsafe.Pointer
		err error
	}
	ch := make(chan made, 1)
	j := &job{host: func(err error) {
		var m made
		if m.err = err; err == nil {
			c.callMu.RLock()
			m.h, m.err = c.split(color, key)
			c.callMu.RUnlock()
		}
		ch <- m
	}}
	if err := c.enqueue(j); err != nil {
		return nil, err
	}
	var m made
	select {
	case m = <-ch:
	case <-ctx.Done():
		go func() {
			if m := <-ch; m.h != nil {
				_ = sysAbort(c.cu, m.h)
			}
		}()
		return nil, context.Cause(ctx)
	}
	if m.err != nil || group == nil {
		return nil, m.err
	}
	b, err := start(cfg, c.ctx, m.h)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// split calls ncclCommSplit, callMu held for reading.
func (c *comm) split(color, key int) (unsafe.Pointer, error) {
	if c.h == nil {
		return nil, c.failure()
	}
	return sysSplit(c.cu, c.h, color, key)
}

// failure returns the error that ended the communicator.
func (c *comm) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return commerr.ErrFinalized
}

// Abort aborts the communicator (ncclCommAbort) and fails its operations
// with err.
func (c *comm) Abort(err error) { c.fail(err) }

// Finalize waits for the operations issued, then finalizes and destroys
// the communicator (ncclCommFinalize, ncclCommDestroy).
func (c *comm) Finalize(ctx context.Context) error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return commerr.ErrFinalized
	}
	c.closing = true
	c.mu.Unlock()
	idle := goResult(func() struct{} { c.unfinished.Wait(); return struct{}{} })
	select {
	case <-idle:
	case <-ctx.Done():
		c.fail(fmt.Errorf("%w: nccl: finalize: %w", commerr.ErrAborted, context.Cause(ctx)))
		<-idle
	}
	close(c.stop)
	c.goroutines.Wait()
	c.callMu.Lock()
	var err error
	if c.h != nil {
		err = sysClose(c.cu, c.h)
		c.h = nil
	}
	c.callMu.Unlock()
	c.mu.Lock()
	c.release()
	c.mu.Unlock()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// Alloc returns a zeroed tensor in device memory of the communicator's
// device.
func (c *comm) Alloc(dt tensor.DType, shape []int) (*tensor.Tensor, error) {
	meta, err := tensor.NewMeta(dt, shape...)
	if err != nil {
		return nil, commerr.Invalid("nccl: %v", err)
	}
	n := max(meta.NBytes(), dt.Size())
	m, err := c.ctx.Alloc(n)
	if err != nil {
		return nil, fmt.Errorf("nccl: %w", err)
	}
	if err := c.ctx.Memset(m, 0, n, 0); err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("nccl: %w", err)
	}
	t, err := tensor.OnDevice(c.dev, m, 0, dt, shape...)
	if err != nil {
		_ = m.Close()
		return nil, commerr.Invalid("nccl: %v", err)
	}
	c.mu.Lock()
	c.mems[m] = struct{}{}
	c.mu.Unlock()
	return t, nil
}

// Free frees the memory of a tensor Alloc returned.
func (c *comm) Free(t *tensor.Tensor) error {
	mem, _ := t.Memory()
	m, ok := mem.(*cuda.DeviceMemory)
	c.mu.Lock()
	_, mine := c.mems[m]
	delete(c.mems, m)
	c.mu.Unlock()
	if !ok || !mine {
		return commerr.Invalid("nccl: Free of a tensor this communicator did not allocate")
	}
	if err := m.Close(); err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	return nil
}

// opError reports op's failure with err as an *OpError.
func (c *comm) opError(op *backend.Op, err error) error {
	return &commerr.OpError{Comm: c.name, Op: string(op.Name), Seq: op.Seq, Rank: c.rank, Err: err}
}
