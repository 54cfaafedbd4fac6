package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/rank"
	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/topo"
)

// A window's puts, gets and atomics to a rank whose memory this process
// can address are done by the calling goroutine (ApplyDirect), with no
// actor on either side: the peer's CPU takes no part. Those ranks are
// the ones in this process when the communicator runs over the
// in-process network, and those of this host when it runs over shared
// memory, whose windows live in memory files they map (nvl's Shared);
// Mapped says which. The atomics are hardware ones, atomic with respect
// to those the target's actor applies (reduce.FetchAndOpWord).
// Accumulates and signals still go through the target's actor, which
// keeps them atomic with respect to one another; a direct put is not
// atomic with respect to them, as MPI's puts are not with respect to
// accumulates.

// windowAlign is the alignment of the memory a window allocates, what
// verbs asks of registered memory: whole pages.
const windowAlign = 4096

// nativeWindow is this rank's part of a window: its memory, the peers'
// it maps, and its actor under the rank's.
type nativeWindow struct {
	n      *native
	id     uint64
	pid    *actor.PID
	mem    []byte
	shared *nvl.Shared // the memory's file, if the host's ranks map it

	direct map[int][]byte // the windows of this host mapped here, by rank
	unmaps []func() error // of the mapped ones
	// inProcess says the communicator runs on the in-process network,
	// whose ranks put to and get from one another's windows directly.
	inProcess bool
	revoked   atomic.Pointer[error]
	waits     atomic.Uint64 // numbers Wait's waits
}

// localWindows are the windows of this process, by communicator, window
// and rank: the memory the ranks of an in-process communicator reach
// directly.
var localWindows sync.Map

type localWindowKey struct {
	comm uint64
	id   uint64
	rank int
}

// OpenWindow allocates or takes the window's memory, tells every rank
// where it is, maps the peers' of this host, and starts its actor, each
// step when the one before has ended.
func (n *native) OpenWindow(cfg backend.WindowConfig, exchange backend.AsyncExchange, done func(backend.Window, error)) {
	switch {
	case n.pid == nil:
		done(nil, commerr.Invalid("the communicator has no members yet"))
		return
	case n.cfg.Device == tensor.Meta:
		done(nil, commerr.Invalid("a window on the meta device would have no memory"))
		return
	}
	w := &nativeWindow{n: n, id: cfg.ID, mem: cfg.Memory, direct: map[int][]byte{}}
	_, w.inProcess = n.cfg.Network.(*transport.Inproc)
	switch {
	case cfg.Carry != nil:
		old := cfg.Carry.(*nativeWindow)
		w.mem, w.shared = old.mem, old.shared
	case w.mem == nil:
		w.mem, w.shared = n.allocWindow(cfg.Size)
	}
	fail := func(err error) {
		w.unmapPeers()
		if cfg.Carry == nil && w.shared != nil {
			w.shared.Close()
		}
		done(nil, err)
	}
	exchange(placementOf(w.shared).encode(), func(all [][]byte, err error) {
		if err == nil {
			err = w.mapPeers(all)
		}
		if err != nil {
			fail(err)
			return
		}
		n.tell(n.pid, &rank.OpenWindow{
			Config: window.Config{ID: w.id, Memory: w.mem, Slots: cfg.Slots, Revoked: func(err error) { w.revoked.Store(&err) }},
			Done: func(pid *actor.PID, err error) {
				if err != nil {
					fail(err)
					return
				}
				w.pid = pid
				localWindows.Store(w.key(n.cfg.Rank), w)
				done(w, nil)
			},
		})
	})
}

func (w *nativeWindow) key(rank int) localWindowKey { return localWindowKey{w.n.commID, w.id, rank} }

func (w *nativeWindow) Memory() []byte { return w.mem }

// Mapped returns rank's memory if it is mapped here or in this process.
func (w *nativeWindow) Mapped(rank int) []byte {
	if mem := w.direct[rank]; mem != nil {
		return mem
	}
	if v, ok := localWindows.Load(w.key(rank)); ok && rank != w.n.cfg.Rank {
		return v.(*nativeWindow).mem
	}
	return nil
}

// Direct returns rank's memory if this rank puts and gets there directly:
// mapped from shared memory, or in this process on the in-process
// network (over another, in-process ranks still take the network's path).
func (w *nativeWindow) Direct(rank int) []byte {
	if mem := w.direct[rank]; mem != nil {
		return mem
	}
	if w.inProcess {
		return w.Mapped(rank)
	}
	return nil
}

// ApplyDirect does o, a put, a get, a fetch-and-op or a compare-and-swap
// the caller checked against the window, on mem, the target's memory as
// Direct returns it: complete when it returns. o's Data and Result are
// laid out as for Issue, unstaged.
func ApplyDirect(mem []byte, o *backend.WindowOp) {
	region := mem[o.Offset : o.Offset+o.Len]
	switch o.Code {
	case backend.WindowPut:
		copy(region, o.Data)
	case backend.WindowGet:
		copy(o.Result, region)
	case backend.WindowFetchAndOp:
		binary.NativeEndian.PutUint64(o.Result, reduce.FetchAndOpWord(region, o.Reduce, o.DType, o.Data))
	case backend.WindowCompareAndSwap:
		binary.NativeEndian.PutUint64(o.Result, reduce.CompareAndSwapWord(region, o.Data[:8], o.Data[8:]))
	default:
		panic(fmt.Sprintf("engine: %v is not a direct window operation", o.Code))
	}
}

// Issue hands op to the window's actor, with a copy of the data it
// carries.
func (w *nativeWindow) Issue(op *backend.WindowOp) {
	if op.Data != nil {
		op.Data = window.Stage(op.Data)
	}
	w.n.tell(w.pid, op)
}

func (w *nativeWindow) Wait(slot int, cmp backend.SignalCmp, value uint64, consume bool, done func(uint64, error)) func(error) {
	id := w.waits.Add(1)
	w.n.tell(w.pid, &window.Wait{ID: id, Slot: slot, Cmp: cmp, Value: value, Consume: consume, Done: done})
	return func(err error) { w.n.tell(w.pid, &window.CancelWait{ID: id, Err: err}) }
}

func (w *nativeWindow) Read(ctx context.Context, slot int, reset bool) (uint64, error) {
	type result struct {
		v   uint64
		err error
	}
	ch := make(chan result, 1)
	w.n.tell(w.pid, &window.Read{Slot: slot, Reset: reset, Done: func(v uint64, err error) { ch <- result{v, err} }})
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (w *nativeWindow) Revoked() error {
	if err := w.revoked.Load(); err != nil {
		return *err
	}
	return nil
}

// Close stops the window's actor and waits for it, and lets go of the
// peers' memory, and of its own memory file unless a window carries it
// on.
func (w *nativeWindow) Close(keepMemory bool) {
	localWindows.Delete(w.key(w.n.cfg.Rank))
	w.unmapPeers()
	if w.shared != nil && !keepMemory {
		w.shared.Close()
	}
	if w.n.finalized.Load() {
		return // the rank stopped it already
	}
	done := make(chan struct{})
	w.n.tell(w.n.pid, &rank.CloseWindow{ID: w.id, Done: func() { close(done) }})
	<-done
}

// sharesMemory reports whether the communicator's network reaches ranks
// of this host through shared memory.
func (n *native) sharesMemory() bool {
	switch n.cfg.Network.(type) {
	case *nvl.Network, *topo.Network:
		return nvl.Host() != ""
	}
	return false
}

// allocWindow returns size bytes of zeroed memory, 4 KiB aligned: in a
// memory file the host's ranks can map where the network shares memory,
// else from the heap.
func (n *native) allocWindow(size int) ([]byte, *nvl.Shared) {
	if size > 0 && n.sharesMemory() {
		if s, err := nvl.NewShared(size); err == nil {
			return s.Mem, s
		} else {
			n.cfg.Logger.Debug("window: shared memory refused, peers will go through its actor", "err", err)
		}
	}
	buf := make([]byte, size+windowAlign)
	skip := (windowAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))%windowAlign) % windowAlign
	return buf[skip : skip+size : skip+size], nil
}

// placement is what a rank tells the others of its window: which host it
// is on, and how to map it there.
type placement struct{ host, pid, fd int64 }

const placementSize = 24

func placementOf(shared *nvl.Shared) placement {
	p := placement{host: hostKey(), pid: int64(os.Getpid()), fd: -1}
	if shared != nil {
		p.fd = int64(shared.Handle.FD)
	}
	return p
}

func (p placement) encode() []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(p.host))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.pid))
	return binary.LittleEndian.AppendUint64(b, uint64(p.fd))
}

func decodePlacement(b []byte) (placement, error) {
	if len(b) != placementSize {
		return placement{}, fmt.Errorf("a window placement of %d bytes, want %d", len(b), placementSize)
	}
	le := binary.LittleEndian
	return placement{host: int64(le.Uint64(b)), pid: int64(le.Uint64(b[8:])), fd: int64(le.Uint64(b[16:]))}, nil
}

// hostKey names this host in a number, 0 if it has no shared memory.
func hostKey() int64 {
	host := nvl.Host()
	if host == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	return int64(h.Sum64() >> 1) // >0 but for a 2^-63 chance
}

// mapPeers maps the windows of the ranks on this host whose memory is in
// a memory file, for direct puts and gets; a rank whose memory cannot be
// mapped is reached through its actor.
func (w *nativeWindow) mapPeers(all [][]byte) error {
	places := make([]placement, len(all))
	for r, b := range all {
		p, err := decodePlacement(b)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		places[r] = p
	}
	me := w.n.cfg.Rank
	for r, p := range places {
		if r == me || p.fd < 0 || places[me].host == 0 || p.host != places[me].host || len(w.mem) == 0 {
			continue
		}
		mem, unmap, err := nvl.MapShared(nvl.SharedHandle{PID: int(p.pid), FD: int(p.fd)}, len(w.mem))
		if err != nil {
			w.n.cfg.Logger.Debug("window: peer's shared memory not mapped; it goes through its actor", "window", w.id, "peer", r, "err", err)
			continue
		}
		w.direct[r] = mem
		w.unmaps = append(w.unmaps, unmap)
	}
	return nil
}

// unmapPeers undoes mapPeers.
func (w *nativeWindow) unmapPeers() {
	for _, unmap := range w.unmaps {
		unmap()
	}
	w.unmaps = nil
	clear(w.direct)
}
