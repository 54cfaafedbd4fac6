package gocomms

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/engine"
	"github.com/gocomms/gocomms/internal/names"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// Window is this rank's part of an RMA window: memory of the same size on
// every rank of a communicator, which other ranks read, write, accumulate
// into and signal without this rank taking part. The backend applies the
// operations that reach a rank one at a time, in the order they arrive; a
// rank whose memory this process maps (backend.Window's Direct) is put
// to, got from and updated atomically here directly. The ordering and
// atomicity rules are in docs/RMA.md.
//
// Offsets count elements of the operation's dtype from the start of the
// target's window, as torchcomms' put does.
type Window struct {
	c     *Comm
	b     backend.Window
	id    uint64
	mem   []byte
	t     *Tensor // the memory, as it was given or as bytes
	slots int

	mu     sync.Mutex
	closed bool
	dirty  []int // ranks written to since their last flush, in order
}

// SignalOp says how a signal changes its slot: SignalSet or SignalAdd.
type SignalOp = backend.SignalOp

// The signal operations.
const (
	SignalSet = backend.SignalSet
	SignalAdd = backend.SignalAdd
)

// SignalCmp compares a signal slot with a value in WaitSignal. The
// ordered comparisons roll over as NCCL's do: a counter that wrapped past
// 2^64 still compares greater than what it passed, within half the range.
type SignalCmp = backend.SignalCmp

// The comparisons.
const (
	SignalEQ = backend.SignalEQ
	SignalNE = backend.SignalNE
	SignalLT = backend.SignalLT
	SignalLE = backend.SignalLE
	SignalGT = backend.SignalGT
	SignalGE = backend.SignalGE
)

// AccessType says how this rank reaches a peer's window, as torchcomms'
// get_attr.
type AccessType int

const (
	// AccessSeparate: through the peer's window actor, over a link.
	AccessSeparate AccessType = iota
	// AccessUnified: the memory is directly addressable here (MapRemote).
	AccessUnified
)

var accessTypeNames = [...]string{AccessSeparate: "separate", AccessUnified: "unified"}

// String returns "unified" for AccessUnified, else "separate".
func (a AccessType) String() string { return names.Else(a, accessTypeNames[:], "separate") }

// ErrWindowClosed fails operations on a closed window, and those a
// window still held when it closed.
var ErrWindowClosed = backend.ErrWindowClosed

// WindowOption configures a new window.
type WindowOption func(*windowConfig)

type windowConfig struct{ slots int }

// WindowSignals sets the number of signal slots of each rank's window
// (default: one per rank, as torchcomms' signal count).
func WindowSignals(n int) WindowOption { return func(c *windowConfig) { c.slots = n } }

// NewWindow creates a window of size bytes on every rank, zeroed and
// aligned to 4 KiB. It is collective: every rank calls it, in the same
// order as the communicator's other windows, with the same size.
func (c *Comm) NewWindow(ctx context.Context, size int, opts ...WindowOption) (*Window, error) {
	return c.awaitWindow(ctx, "new_window", func(done func(*Window, error)) {
		c.newWindowAsync(ctx, size, done, opts)
	})
}

// NewWindowAsync is the async form of NewWindow: done is called once,
// with the window or why there is none, from the goroutine that ends its
// creation, and must not block. The creation is collective operations
// in the communicator's order: issue no other operation on it before
// done.
func (c *Comm) NewWindowAsync(size int, done func(*Window, error), opts ...WindowOption) {
	c.newWindowAsync(context.Background(), size, done, opts)
}

func (c *Comm) newWindowAsync(ctx context.Context, size int, done func(*Window, error), opts []WindowOption) {
	if size < 0 {
		done(nil, c.windowError("new_window", commerr.Invalid("negative window size %d", size)))
		return
	}
	c.openWindow(ctx, "new_window", backend.WindowConfig{Size: size}, nil, opts, done)
}

// NewWindowFromTensor creates a window over t's memory on every rank; t
// must be 8-byte aligned, and its size in bytes the same on every rank.
// It is collective, as NewWindow. The window uses t until Close: writing
// t meanwhile races with other ranks' operations unless a signal or a
// fence orders them.
func (c *Comm) NewWindowFromTensor(ctx context.Context, t *Tensor, opts ...WindowOption) (*Window, error) {
	if err := c.checkTensor("tensor", t); err != nil {
		return nil, c.windowError("new_window", err)
	}
	mem := t.Bytes()
	if len(mem) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%8 != 0 {
		return nil, c.windowError("new_window", commerr.Invalid("the tensor's memory is not 8-byte aligned"))
	}
	return c.awaitWindow(ctx, "new_window", func(done func(*Window, error)) {
		c.openWindow(ctx, "new_window", backend.WindowConfig{Size: len(mem), Memory: mem}, t, opts, done)
	})
}

// awaitWindow waits for the window open makes. A ctx that ends first
// leaves the creation running on the other ranks; this rank's part is
// released when it is made.
func (c *Comm) awaitWindow(ctx context.Context, name OpName, open func(done func(*Window, error))) (*Window, error) {
	w, ended, err := await(ctx, open, func(w *Window) { w.b.Close(false) })
	if !ended {
		return nil, c.windowError(name, context.Cause(ctx))
	}
	return w, err
}

// openWindow opens the window cfg describes through the backend, then
// meets the other ranks in a barrier; t is its memory as a tensor, nil
// for the backend's memory as bytes. ctx's deadline bounds each step.
func (c *Comm) openWindow(ctx context.Context, name OpName, cfg backend.WindowConfig, t *Tensor, opts []WindowOption, opened func(*Window, error)) {
	end, err := c.observe(&Op{Name: name, Root: -1})
	if err != nil {
		opened(nil, err)
		return
	}
	done := func(w *Window, err error) {
		end(err)
		opened(w, err)
	}
	wc := windowConfig{slots: c.Size()}
	for _, o := range opts {
		o(&wc)
	}
	wins, ok := c.backend.(backend.Windows)
	if !ok || c.Size() == 0 {
		done(nil, c.windowError(name, commerr.Invalid("the %s backend has no windows", c.backendName)))
		return
	}
	if wc.slots < 0 {
		done(nil, c.windowError(name, commerr.Invalid("negative signal count %d", wc.slots)))
		return
	}
	cfg.Slots = wc.slots
	c.mu.Lock()
	cfg.ID = c.windows
	c.windows++
	c.mu.Unlock()
	wins.OpenWindow(cfg, c.symmetricExchange(ctx, cfg.Size, cfg.Slots), func(b backend.Window, err error) {
		if err != nil {
			done(nil, c.windowError(name, err))
			return
		}
		if t == nil {
			t, _ = tensor.FromBytes(Uint8, b.Memory(), cfg.Size)
		}
		w := &Window{c: c, b: b, id: cfg.ID, mem: b.Memory(), t: t, slots: cfg.Slots}
		// Every rank's window is there before anyone's first operation:
		// not needed by the native backend (links keep frames until a
		// route takes them), but it makes creation the synchronisation
		// users expect.
		barrier := barrierOp()
		c.issue(ctx, &barrier, nil, nil, nil, false).OnEnd(func(wk *Work) {
			if err := wk.Err(); err != nil {
				b.Close(false)
				done(nil, err)
				return
			}
			done(w, nil)
		})
	})
}

// symmetricExchange is the exchange a window's backend rendezvouses
// through, which checks on the way that every rank's window has size
// bytes and slots signals, so that all fail alike when they differ.
func (c *Comm) symmetricExchange(ctx context.Context, size, slots int) backend.AsyncExchange {
	return func(mine []byte, done func([][]byte, error)) {
		const head = 16
		b := binary.LittleEndian.AppendUint64(nil, uint64(size))
		b = binary.LittleEndian.AppendUint64(b, uint64(slots))
		c.exchangeAsync(ctx, append(b, mine...), func(all [][]byte, err error) {
			if err != nil {
				done(nil, err)
				return
			}
			for r, a := range all {
				if len(a) < head {
					done(nil, fmt.Errorf("rank %d sent no window shape", r))
					return
				}
				rs, rn := int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(a[8:]))
				if rs != int64(size) || rn != int64(slots) {
					done(nil, commerr.Invalid("rank %d's window has %d bytes and %d signals, rank %d's %d and %d: windows are symmetric",
						r, rs, rn, c.Rank(), size, slots))
					return
				}
				all[r] = a[head:]
			}
			done(all, nil)
		})
	}
}

// Size returns the window's size in bytes, the same on every rank.
func (w *Window) Size() int { return len(w.mem) }

// Tensor returns this rank's window memory: the tensor it was made from,
// or its bytes.
func (w *Window) Tensor() *Tensor { return w.t }

// Signals returns the number of signal slots.
func (w *Window) Signals() int { return w.slots }

// Access says how this rank reaches rank's window.
func (w *Window) Access(rank int) AccessType {
	if rank == w.c.Rank() || w.b.Mapped(rank) != nil {
		return AccessUnified
	}
	return AccessSeparate
}

// MapRemote returns rank's window memory, as bytes, where this rank can
// address it directly (Access reports AccessUnified): its own, those of
// ranks in this process, and those of ranks of this host over shared
// memory. Reading it races with the operations other ranks apply there
// unless a signal or a flush orders them.
func (w *Window) MapRemote(rank int) (*Tensor, error) {
	if err := w.c.checkRank("rank", rank); err != nil {
		return nil, w.error("map_remote", rank, err)
	}
	if rank == w.c.Rank() {
		return w.t, nil
	}
	mem := w.b.Mapped(rank)
	if mem == nil {
		return nil, w.error("map_remote", rank, commerr.Invalid("rank %d's window is not addressable from rank %d (access is separate)", rank, w.c.Rank()))
	}
	t, _ := tensor.FromBytes(Uint8, mem, len(mem))
	return t, nil
}

// Put writes src into rank's window at offset (in src's elements), and
// returns once src may be reused. The data is visible at the target
// after a Flush of rank, a Fence, or with a signal that follows it.
func (w *Window) Put(ctx context.Context, src *Tensor, rank, offset int, opts ...CallOption) error {
	if mem := w.b.Direct(rank); mem != nil {
		return w.metered("window_put", w.error("window_put", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.carry(backend.WindowPut, src, rank, offset)
		}))) // no Work to make
	}
	return w.PutAsync(src, rank, offset, opts...).Wait(ctx)
}

// PutAsync is the async form of Put.
func (w *Window) PutAsync(src *Tensor, rank, offset int, opts ...CallOption) *Work {
	if mem := w.b.Direct(rank); mem != nil {
		return w.ended("window_put", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.carry(backend.WindowPut, src, rank, offset)
		}))
	}
	return w.start("window_put", opts, func() (*backend.WindowOp, error) {
		return w.carry(backend.WindowPut, src, rank, offset)
	})
}

// PutSignal is Put with a signal applied with it: a target that sees the
// signal sees the data.
func (w *Window) PutSignal(ctx context.Context, src *Tensor, rank, offset, slot int, op SignalOp, value uint64, opts ...CallOption) error {
	return w.PutSignalAsync(src, rank, offset, slot, op, value, opts...).Wait(ctx)
}

// PutSignalAsync is the async form of PutSignal.
func (w *Window) PutSignalAsync(src *Tensor, rank, offset, slot int, op SignalOp, value uint64, opts ...CallOption) *Work {
	if mem := w.b.Direct(rank); mem != nil {
		// The data goes directly; the signal follows through the actor.
		err := w.signalOf(&backend.WindowOp{}, slot, op, value)
		if err == nil {
			err = w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
				return w.carry(backend.WindowPut, src, rank, offset)
			})
		}
		if err != nil {
			return w.ended("window_put_signal", rank, err)
		}
		return w.start("window_put_signal", opts, func() (*backend.WindowOp, error) {
			return &backend.WindowOp{Code: backend.WindowSignal, Peer: rank, Signal: op, Slot: slot, Value: value}, nil
		})
	}
	return w.start("window_put_signal", opts, func() (*backend.WindowOp, error) {
		o, err := w.carry(backend.WindowPut, src, rank, offset)
		if err != nil {
			return nil, err
		}
		return o, w.signalOf(o, slot, op, value)
	})
}

// Get reads rank's window at offset into dst.
func (w *Window) Get(ctx context.Context, dst *Tensor, rank, offset int, opts ...CallOption) error {
	if mem := w.b.Direct(rank); mem != nil {
		return w.metered("window_get", w.error("window_get", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.fetch(dst, rank, offset)
		})))
	}
	return w.GetAsync(dst, rank, offset, opts...).Wait(ctx)
}

// GetAsync is the async form of Get.
func (w *Window) GetAsync(dst *Tensor, rank, offset int, opts ...CallOption) *Work {
	if mem := w.b.Direct(rank); mem != nil {
		return w.ended("window_get", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.fetch(dst, rank, offset)
		}))
	}
	return w.start("window_get", opts, func() (*backend.WindowOp, error) {
		return w.fetch(dst, rank, offset)
	})
}

// Accumulate combines src into rank's window at offset with op,
// element by element: atomically with respect to every other operation
// the target applies.
func (w *Window) Accumulate(ctx context.Context, src *Tensor, rank, offset int, op ReduceOp, opts ...CallOption) error {
	return w.AccumulateAsync(src, rank, offset, op, opts...).Wait(ctx)
}

// AccumulateAsync is the async form of Accumulate.
func (w *Window) AccumulateAsync(src *Tensor, rank, offset int, op ReduceOp, opts ...CallOption) *Work {
	return w.start("window_accumulate", opts, func() (*backend.WindowOp, error) {
		return w.accumulate(backend.WindowAccumulate, src, nil, rank, offset, op)
	})
}

// GetAccumulate is Accumulate that also reads back, into result, what
// the window held before, in the same atomic step.
func (w *Window) GetAccumulate(ctx context.Context, src, result *Tensor, rank, offset int, op ReduceOp, opts ...CallOption) error {
	return w.GetAccumulateAsync(src, result, rank, offset, op, opts...).Wait(ctx)
}

// GetAccumulateAsync is the async form of GetAccumulate.
func (w *Window) GetAccumulateAsync(src, result *Tensor, rank, offset int, op ReduceOp, opts ...CallOption) *Work {
	return w.start("window_get_accumulate", opts, func() (*backend.WindowOp, error) {
		return w.accumulate(backend.WindowGetAccumulate, src, result, rank, offset, op)
	})
}

// FetchAndOp combines the one 8-byte element of operand into rank's
// window at offset with op and reads the element's value before into
// result, atomically, as MPI_Fetch_and_op.
func (w *Window) FetchAndOp(ctx context.Context, operand, result *Tensor, rank, offset int, op ReduceOp, opts ...CallOption) error {
	if mem := w.b.Direct(rank); mem != nil {
		return w.metered("window_fetch_and_op", w.error("window_fetch_and_op", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.accumulate(backend.WindowFetchAndOp, operand, result, rank, offset, op)
		})))
	}
	return w.FetchAndOpAsync(operand, result, rank, offset, op, opts...).Wait(ctx)
}

// FetchAndOpAsync is the async form of FetchAndOp.
func (w *Window) FetchAndOpAsync(operand, result *Tensor, rank, offset int, op ReduceOp, opts ...CallOption) *Work {
	if mem := w.b.Direct(rank); mem != nil {
		return w.ended("window_fetch_and_op", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.accumulate(backend.WindowFetchAndOp, operand, result, rank, offset, op)
		}))
	}
	return w.start("window_fetch_and_op", opts, func() (*backend.WindowOp, error) {
		return w.accumulate(backend.WindowFetchAndOp, operand, result, rank, offset, op)
	})
}

// CompareAndSwap replaces the 8-byte element of rank's window at offset
// with value's if it equals compare's, and reads what it held before into
// result, atomically, as MPI_Compare_and_swap.
func (w *Window) CompareAndSwap(ctx context.Context, value, compare, result *Tensor, rank, offset int, opts ...CallOption) error {
	if mem := w.b.Direct(rank); mem != nil {
		return w.metered("window_compare_and_swap", w.error("window_compare_and_swap", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.swap(value, compare, result, rank, offset)
		})))
	}
	return w.CompareAndSwapAsync(value, compare, result, rank, offset, opts...).Wait(ctx)
}

// CompareAndSwapAsync is the async form of CompareAndSwap.
func (w *Window) CompareAndSwapAsync(value, compare, result *Tensor, rank, offset int, opts ...CallOption) *Work {
	if mem := w.b.Direct(rank); mem != nil {
		return w.ended("window_compare_and_swap", rank, w.direct(rank, mem, opts, func() (*backend.WindowOp, error) {
			return w.swap(value, compare, result, rank, offset)
		}))
	}
	return w.start("window_compare_and_swap", opts, func() (*backend.WindowOp, error) {
		return w.swap(value, compare, result, rank, offset)
	})
}

// Signal changes signal slot of rank's window: SignalSet sets it to
// value, SignalAdd adds value. It follows every operation this rank issued
// to rank before it: a target that sees the signal sees them applied.
func (w *Window) Signal(ctx context.Context, rank, slot int, op SignalOp, value uint64, opts ...CallOption) error {
	return w.SignalAsync(rank, slot, op, value, opts...).Wait(ctx)
}

// SignalAsync is the async form of Signal.
func (w *Window) SignalAsync(rank, slot int, op SignalOp, value uint64, opts ...CallOption) *Work {
	return w.start("window_signal", opts, func() (*backend.WindowOp, error) {
		if err := w.c.checkRank("rank", rank); err != nil {
			return nil, err
		}
		o := &backend.WindowOp{Code: backend.WindowSignal, Peer: rank}
		return o, w.signalOf(o, slot, op, value)
	})
}

// Notify signals rank once, as torchcomms' signal(peer): it adds one to
// the slot of rank's window numbered after this rank, which rank's
// WaitNotify counts.
func (w *Window) Notify(ctx context.Context, rank int, opts ...CallOption) error {
	return w.Signal(ctx, rank, w.c.Rank(), SignalAdd, 1, opts...)
}

// WaitNotify waits for a notification from rank that no earlier
// WaitNotify took, as torchcomms' wait_signal(peer): N notifications
// satisfy N waits, in whatever order they come.
func (w *Window) WaitNotify(ctx context.Context, rank int) error {
	if err := w.c.checkRank("rank", rank); err != nil {
		return w.error("window_wait_signal", rank, err)
	}
	_, err := w.await(ctx, rank, 0, 0, true)
	return err
}

// WaitSignal waits until this rank's signal slot compares with value as
// cmp says, and returns the slot's value then.
func (w *Window) WaitSignal(ctx context.Context, slot int, cmp SignalCmp, value uint64) (uint64, error) {
	if !cmp.Valid() {
		return 0, w.error("window_wait_signal", -1, commerr.Invalid("invalid comparison %v", cmp))
	}
	return w.await(ctx, slot, cmp, value, false)
}

// WaitSignalAsync is the async form of WaitSignal: done is called once,
// with what WaitSignal returns, from the goroutine that satisfies the
// wait, and must not block; cancel gives the wait up with err.
func (w *Window) WaitSignalAsync(slot int, cmp SignalCmp, value uint64, done func(uint64, error)) (cancel func(error)) {
	if !cmp.Valid() {
		done(0, w.error("window_wait_signal", -1, commerr.Invalid("invalid comparison %v", cmp)))
		return func(error) {}
	}
	return w.awaitAsync(slot, cmp, value, false, done)
}

// ReadSignal returns this rank's signal slot, in order with the signals
// that reach it.
func (w *Window) ReadSignal(ctx context.Context, slot int) (uint64, error) {
	return w.read(ctx, slot, false)
}

// ResetSignal sets this rank's signal slot to zero and returns what it
// held, in one step: a signal is either in the value returned or counts
// from zero after it, never lost between.
func (w *Window) ResetSignal(ctx context.Context, slot int) (uint64, error) {
	return w.read(ctx, slot, true)
}

// Flush returns once every operation this rank issued to rank has been
// applied there (remote completion).
func (w *Window) Flush(ctx context.Context, rank int, opts ...CallOption) error {
	w.mu.Lock()
	clean := !slices.Contains(w.dirty, rank)
	w.mu.Unlock()
	if clean && rank >= 0 && rank < w.c.Size() {
		return w.error("window_flush", rank, w.unusable()) // nothing to wait for, no Work to make
	}
	return w.start("window_flush", opts, func() (*backend.WindowOp, error) {
		if err := w.c.checkRank("rank", rank); err != nil {
			return nil, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !slices.Contains(w.dirty, rank) {
			return nil, nil // nothing went through the actor since: all is complete
		}
		w.dirty = slices.DeleteFunc(w.dirty, func(r int) bool { return r == rank })
		return &backend.WindowOp{Code: backend.WindowFlush, Peer: rank}, nil
	}).Wait(ctx)
}

// FlushAll is Flush of every rank this rank wrote to since it last
// flushed them.
func (w *Window) FlushAll(ctx context.Context, opts ...CallOption) error {
	w.mu.Lock()
	ranks := w.dirty
	w.dirty = nil
	w.mu.Unlock()
	works := make([]*Work, len(ranks))
	for i, r := range ranks {
		works[i] = w.start("window_flush", opts, func() (*backend.WindowOp, error) {
			return &backend.WindowOp{Code: backend.WindowFlush, Peer: r}, nil
		})
	}
	var errs []error
	for _, wk := range works {
		errs = append(errs, wk.Wait(ctx))
	}
	return errors.Join(errs...)
}

// FlushLocal returns once the buffers of every operation this rank issued
// to rank may be reused (local completion). Operations copy what they
// send when issued, so that is at once; it checks its argument and the
// window, as MPI_Win_flush_local would.
func (w *Window) FlushLocal(ctx context.Context, rank int) error {
	if err := w.c.checkRank("rank", rank); err != nil {
		return w.error("window_flush_local", rank, err)
	}
	if err := w.unusable(); err != nil {
		return w.error("window_flush_local", rank, err)
	}
	return ctx.Err()
}

// Fence completes every rank's operations on the window everywhere: each
// rank flushes what it wrote, then all meet in a barrier. It is
// collective.
func (w *Window) Fence(ctx context.Context) error {
	if err := w.FlushAll(ctx); err != nil {
		return err
	}
	return w.c.Barrier(ctx)
}

// Shrink carries the window over to c, the communicator Comm.Shrink made
// of the survivors of this window's communicator, and returns it: the
// same memory on every survivor, its data intact, now numbered by c's
// ranks, with fresh signal slots. It is collective over c. The window it
// replaces is released here without the others: some of its ranks are
// gone.
func (w *Window) Shrink(ctx context.Context, c *Comm) (*Window, error) {
	if errors.Is(w.unusable(), ErrWindowClosed) {
		return nil, w.error("window_shrink", -1, ErrWindowClosed)
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.b.Close(true)
	return c.awaitWindow(ctx, "window_shrink", func(done func(*Window, error)) {
		c.openWindow(ctx, "window_shrink", backend.WindowConfig{Size: len(w.mem), Carry: w.b}, w.t, []WindowOption{WindowSignals(w.slots)}, done)
	})
}

// LockType is how a rank holds another's window lock: with others
// (shared), or alone (exclusive).
type LockType int

const (
	LockShared LockType = iota
	LockExclusive
)

var lockTypeNames = [...]string{LockShared: "shared", LockExclusive: "exclusive"}

// String returns "exclusive" for LockExclusive, else "shared".
func (l LockType) String() string { return names.Else(l, lockTypeNames[:], "shared") }

// Lock takes rank's window lock, waiting for it as long as the operation's
// timeout allows: shared with other shared holders, or exclusive. Locks
// order only the ranks that take them, as MPI_Win_lock's epochs do: an
// operation needs none. A Lock that fails or is given up withdraws its
// request.
func (w *Window) Lock(ctx context.Context, rank int, lt LockType, opts ...CallOption) error {
	err := w.start("window_lock", opts, func() (*backend.WindowOp, error) {
		if err := w.c.checkRank("rank", rank); err != nil {
			return nil, err
		}
		if lt != LockShared && lt != LockExclusive {
			return nil, commerr.Invalid("invalid lock type %v", lt)
		}
		o := &backend.WindowOp{Code: backend.WindowLock, Peer: rank}
		if lt == LockExclusive {
			o.Value = 1
		}
		return o, nil
	}).Wait(ctx)
	if err != nil && !errors.Is(err, ErrInvalidArgument) {
		w.start("window_unlock", nil, func() (*backend.WindowOp, error) {
			return &backend.WindowOp{Code: backend.WindowUnlock, Peer: rank}, nil
		})
	}
	return err
}

// Unlock releases rank's window lock once every operation this rank
// issued to rank before it has been applied there.
func (w *Window) Unlock(ctx context.Context, rank int, opts ...CallOption) error {
	return w.start("window_unlock", opts, func() (*backend.WindowOp, error) {
		if err := w.c.checkRank("rank", rank); err != nil {
			return nil, err
		}
		return &backend.WindowOp{Code: backend.WindowUnlock, Peer: rank}, nil
	}).Wait(ctx)
}

// Close ends the window on every rank; it is collective, with a barrier
// before, once this rank's operations are complete everywhere, and after,
// as torchcomms' deregister. Operations still waiting fail with
// ErrWindowClosed, and so do later ones.
func (w *Window) Close(ctx context.Context) (err error) {
	if err := w.unusable(); err != nil {
		return w.error("window_close", -1, err)
	}
	end, err := w.c.observe(&Op{Name: "window_close", Root: -1})
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	if err := w.Fence(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.b.Close(false)
	return w.c.Barrier(ctx)
}

// unusable reports why the window takes no operation, or nil: it was
// closed, or its communicator finalized, which released the backend's
// part of it (failing what it still held).
func (w *Window) unusable() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return ErrWindowClosed
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.c.finalized {
		return ErrFinalized
	}
	return nil
}

// start issues the operation that mk builds and checks, and returns its
// Work.
func (w *Window) start(name OpName, opts []CallOption, mk func() (*backend.WindowOp, error)) *Work {
	if err := w.unusable(); err != nil {
		return w.ended(name, -1, err)
	}
	op := &Op{Name: name, Root: -1}
	if err := w.c.preHook(op); err != nil {
		return endedWork(op, err)
	}
	o, err := mk()
	if err != nil || o == nil { // refused, or nothing to do
		return w.ended(name, -1, err)
	}
	cc := callOf(opts)
	o.Timeout = w.c.Timeout()
	if cc.timeout > 0 {
		o.Timeout = cc.timeout
	}
	wk := newWork(op, nil)
	o.Done = func(err error) { wk.finish(w.metered(name, w.error(name, o.Peer, err))) }
	if o.Code != backend.WindowFlush && o.Code != backend.WindowLock && o.Code != backend.WindowUnlock && o.Peer != w.c.Rank() {
		w.mu.Lock()
		if !slices.Contains(w.dirty, o.Peer) {
			w.dirty = append(w.dirty, o.Peer)
		}
		w.mu.Unlock()
	}
	w.b.Issue(o)
	w.c.issueHook(op, wk)
	return wk
}

// ended returns the Work of an operation that ended as it was issued:
// refused with err, or done by the caller (a direct one) if err is nil.
func (w *Window) ended(name OpName, rank int, err error) *Work {
	return endedWork(&Op{Name: name, Root: -1}, w.metered(name, w.error(name, rank, err)))
}

// A window's operations on a rank whose memory this process maps
// (backend.Window's Direct) are done by the calling goroutine
// (engine.ApplyDirect), with no actor on either side: the peer's CPU
// takes no part.

// direct does the operation mk builds and checks on mem, rank's window
// as Direct returns it; it is complete when direct returns.
func (w *Window) direct(rank int, mem []byte, opts []CallOption, mk func() (*backend.WindowOp, error)) error {
	o, err := mk()
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		engine.ApplyDirect(mem, o)
	}
	return err
}

// usableDirect reports why a direct operation on rank cannot go now: the
// window is closed or revoked, or what this rank issued to rank through
// its actor before did not complete. That Flush, which costs nothing if
// nothing went through the actor since the last, keeps operations from
// one rank to another applied in issue order.
func (w *Window) usableDirect(rank int, opts []CallOption) error {
	if err := w.unusable(); err != nil {
		return err
	}
	if err := w.b.Revoked(); err != nil {
		return err
	}
	if err := w.Flush(context.Background(), rank, opts...); err != nil {
		var oe *OpError
		if errors.As(err, &oe) {
			return errors.Unwrap(oe.Err) // the flush's cause, without its "window N:", which the caller adds
		}
		return err
	}
	return nil
}

// region checks t against the window at rank and offset, in t's
// elements, and returns the operation over it.
func (w *Window) region(code backend.WindowCode, what string, t *Tensor, rank, offset int) (*backend.WindowOp, error) {
	if err := w.c.checkRank("rank", rank); err != nil {
		return nil, err
	}
	if err := w.c.checkTensor(what, t); err != nil {
		return nil, err
	}
	size := t.DType().Size()
	n := t.NBytes()
	if offset < 0 || offset > (len(w.mem)-n)/max(size, 1) || n > len(w.mem) {
		return nil, commerr.Invalid("%v of %d bytes at element %d (%v) overruns the window's %d bytes", code, n, offset, t.DType(), len(w.mem))
	}
	return &backend.WindowOp{Code: code, Peer: rank, Offset: uint64(offset * size), Len: uint64(n), DType: t.DType()}, nil
}

// carry is region for an operation that sends t, with a copy of it.
func (w *Window) carry(code backend.WindowCode, t *Tensor, rank, offset int) (*backend.WindowOp, error) {
	o, err := w.region(code, "src", t, rank, offset)
	if err != nil {
		return nil, err
	}
	o.Data = t.Bytes()
	return o, nil
}

// fetch is region for a get into dst.
func (w *Window) fetch(dst *Tensor, rank, offset int) (*backend.WindowOp, error) {
	o, err := w.region(backend.WindowGet, "dst", dst, rank, offset)
	if err != nil {
		return nil, err
	}
	o.Result = dst.Bytes()
	return o, nil
}

// swap builds a compare-and-swap: its data is value, then compare.
func (w *Window) swap(value, compare, result *Tensor, rank, offset int) (*backend.WindowOp, error) {
	if err := checkSwap(value, compare, result); err != nil {
		return nil, err
	}
	o, err := w.region(backend.WindowCompareAndSwap, "value", value, rank, offset)
	if err != nil {
		return nil, err
	}
	var operands [16]byte
	copy(operands[:], value.Bytes())
	copy(operands[8:], compare.Bytes())
	o.Data, o.Result = operands[:], result.Bytes()
	return o, nil
}

// accumulate builds the accumulating operations; result, if the code
// fetches, takes what the window held.
func (w *Window) accumulate(code backend.WindowCode, src, result *Tensor, rank, offset int, op ReduceOp) (*backend.WindowOp, error) {
	if err := w.checkAccumulate(code, src, result, op); err != nil {
		return nil, err
	}
	o, err := w.carry(code, src, rank, offset)
	if err != nil {
		return nil, err
	}
	o.Reduce = op.Kind()
	if result != nil {
		o.Result = result.Bytes()
	}
	return o, nil
}

// checkAccumulate checks the arguments of an accumulating operation of
// code: src, op, and result where the code fetches.
func (w *Window) checkAccumulate(code backend.WindowCode, src, result *Tensor, op ReduceOp) error {
	if code == backend.WindowFetchAndOp {
		if err := checkWord("operand", src); err != nil {
			return err
		}
	}
	if err := w.c.checkTensor("src", src); err != nil {
		return err
	}
	if err := checkReduce(op, src.DType()); err != nil {
		return err
	}
	if k := op.Kind(); k == reduce.Avg || k == reduce.PreMulSum {
		return commerr.Invalid("%v does not accumulate: it needs every rank's contribution", op)
	}
	if code != backend.WindowAccumulate {
		if err := w.c.checkTensor("result", result); err != nil {
			return err
		}
		if result.DType() != src.DType() || result.NBytes() != src.NBytes() {
			return commerr.Invalid("result is %v of %d bytes, src %v of %d", result.DType(), result.NBytes(), src.DType(), src.NBytes())
		}
	}
	return nil
}

// checkSwap checks the arguments of a compare-and-swap: three 8-byte
// elements of one dtype.
func checkSwap(value, compare, result *Tensor) error {
	for _, a := range []struct {
		what string
		t    *Tensor
	}{{"value", value}, {"compare", compare}, {"result", result}} {
		if err := checkWord(a.what, a.t); err != nil {
			return err
		}
		if a.t.DType() != value.DType() {
			return commerr.Invalid("%s is %v, value %v", a.what, a.t.DType(), value.DType())
		}
	}
	return nil
}

// checkWord checks that t is one 8-byte element, what the atomics take.
func checkWord(what string, t *Tensor) error {
	if t == nil {
		return commerr.Invalid("%s is nil", what)
	}
	if t.Numel() != 1 || t.DType().Size() != 8 {
		return commerr.Invalid("%s is %d elements of %v, not one 8-byte element", what, t.Numel(), t.DType())
	}
	return nil
}

// signalOf adds a signal to o.
func (w *Window) signalOf(o *backend.WindowOp, slot int, op SignalOp, value uint64) error {
	if slot < 0 || slot >= w.slots {
		return commerr.Invalid("signal slot %d out of range [0,%d)", slot, w.slots)
	}
	if op != SignalSet && op != SignalAdd {
		return commerr.Invalid("invalid signal op %v", op)
	}
	o.Signal, o.Slot, o.Value = op, slot, value
	return nil
}

// await runs a wait on this rank's window until it is satisfied or ctx
// ends.
func (w *Window) await(ctx context.Context, slot int, cmp SignalCmp, value uint64, consume bool) (uint64, error) {
	type result struct {
		v   uint64
		err error
	}
	ch := make(chan result, 1)
	cancel := w.awaitAsync(slot, cmp, value, consume, func(v uint64, err error) { ch <- result{v, err} })
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		cancel(ctx.Err())
		r := <-ch // satisfied meanwhile, or cancelled
		return r.v, r.err
	}
}

// awaitAsync starts a wait on this rank's window, which calls done once.
func (w *Window) awaitAsync(slot int, cmp SignalCmp, value uint64, consume bool, done func(uint64, error)) (cancel func(error)) {
	if err := w.unusable(); err != nil {
		done(0, w.error("window_wait_signal", -1, err))
		return func(error) {}
	}
	return w.b.Wait(slot, cmp, value, consume, func(v uint64, err error) { done(v, w.error("window_wait_signal", -1, err)) })
}

func (w *Window) read(ctx context.Context, slot int, reset bool) (uint64, error) {
	name := OpName("window_read_signal")
	if reset {
		name = "window_reset_signal"
	}
	if err := w.unusable(); err != nil {
		return 0, w.error(name, -1, err)
	}
	v, err := w.b.Read(ctx, slot, reset)
	return v, w.error(name, -1, err)
}

// error names the communicator, the window, the operation and the rank
// it targeted (-1: none) in err, if not nil.
func (w *Window) error(name OpName, target int, err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	e := &OpError{Comm: w.c.cfg.Name, Op: string(name), Rank: w.c.Rank(), Err: fmt.Errorf("window %d: %w", w.id, err)}
	// The target is whom the operation is about, unless a rank failed:
	// the error names that one, which may be another.
	if target >= 0 && !errors.Is(err, ErrPeerFailed) && !errors.Is(err, ErrRevoked) && !errors.Is(err, ErrAborted) {
		e.Ranks = []int{target}
	}
	return e
}

// windowError is error for a window not made yet.
func (c *Comm) windowError(name OpName, err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		return err // an operation of the creation's, which names its ranks
	}
	return &OpError{Comm: c.cfg.Name, Op: string(name), Rank: c.Rank(), Err: err}
}
