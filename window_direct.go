package gocomms

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"unsafe"

	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/nvl"
	"github.com/gocomms/gocomms/transport/topo"
)

// A window's puts and gets to a rank whose memory this process can
// address are copies by the calling goroutine, with no actor on either
// side: the peer's CPU takes no part. Those ranks are the ones in this
// process when the communicator runs over the in-process network, and
// those of this host when it runs over shared memory, whose windows live
// in memory files they map (transport/nvl's Shared). Accumulates, atomics
// and signals still go through the target's actor, which keeps them
// atomic with respect to one another; a direct put is not atomic with
// respect to them, as MPI's puts are not with respect to accumulates.

// windowMemory is a window's memory on this rank, and, if the ranks of
// this host may map it, its memory file.
type windowMemory struct {
	mem    []byte
	shared *nvl.Shared
}

// sharesMemory reports whether the communicator's network reaches ranks
// of this host through shared memory.
func (c *Comm) sharesMemory() bool {
	switch c.cfg.Network.(type) {
	case *nvl.Network, *topo.Network:
		return nvl.Host() != ""
	}
	return false
}

// inProcess reports whether every rank of the communicator runs in this
// process, on the in-process network.
func (c *Comm) inProcess() bool {
	_, ok := c.cfg.Network.(*transport.Inproc)
	return ok
}

// allocWindow returns size bytes of zeroed memory, 4 KiB aligned: in a
// memory file the host's ranks can map where the network shares memory,
// else from the heap.
func (c *Comm) allocWindow(size int) windowMemory {
	if size > 0 && c.sharesMemory() {
		if s, err := nvl.NewShared(size); err == nil {
			return windowMemory{mem: s.Mem, shared: s}
		} else {
			c.cfg.Logger.Debug("window: shared memory refused, peers will go through its actor", "err", err)
		}
	}
	buf := make([]byte, size+windowAlign)
	skip := (windowAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))%windowAlign) % windowAlign
	return windowMemory{mem: buf[skip : skip+size : skip+size]}
}

// placement is what a rank tells the others of its window, beside its
// size and signal count: which host it is on, and how to map it there.
type placement struct{ host, pid, fd int64 }

func (m windowMemory) placement() placement {
	p := placement{host: hostKey(), pid: int64(os.Getpid()), fd: -1}
	if m.shared != nil {
		p.fd = int64(m.shared.Handle.FD)
	}
	return p
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
func (w *Window) mapPeers(places []placement) {
	me := places[w.c.Rank()]
	for r, p := range places {
		if r == w.c.Rank() || p.fd < 0 || me.host == 0 || p.host != me.host || len(w.mem) == 0 {
			continue
		}
		mem, unmap, err := nvl.MapShared(nvl.SharedHandle{PID: int(p.pid), FD: int(p.fd)}, len(w.mem))
		if err != nil {
			w.c.cfg.Logger.Debug("window: peer's shared memory not mapped; it goes through its actor", "window", w.id, "rank", r, "err", err)
			continue
		}
		w.direct[r] = mem
		w.unmaps = append(w.unmaps, unmap)
	}
}

// reachInProcess records the windows of the other ranks of an in-process
// communicator, once all are made, for direct puts and gets.
func (w *Window) reachInProcess() {
	if !w.c.inProcess() {
		return
	}
	for r := range w.c.Size() {
		if v, ok := localWindows.Load(localWindowKey{w.n.commID, w.id, r}); ok && r != w.c.Rank() {
			w.direct[r] = v.(*Window).mem
		}
	}
}

// directTo returns rank's window memory if this rank puts and gets there
// directly, else nil.
func (w *Window) directTo(rank int) []byte { return w.direct[rank] }

// settle completes remotely what this rank issued to rank through its
// actor, before a direct operation, so that operations from one rank to
// another still apply in issue order: a Flush, which costs nothing if
// nothing went through the actor since the last.
func (w *Window) settle(rank int, opts []CallOption) error {
	return w.Flush(context.Background(), rank, opts...)
}

// putInto copies src into mem, rank's window, at offset: a direct put,
// complete when it returns.
func (w *Window) putInto(src *Tensor, rank, offset int, mem []byte, opts []CallOption) error {
	o, err := w.region(window.Put, "src", src, rank, offset)
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		copy(mem[o.Offset:o.Offset+o.Len], src.Bytes())
	}
	return err
}

// getFrom copies mem, rank's window, at offset into dst: a direct get.
func (w *Window) getFrom(dst *Tensor, rank, offset int, mem []byte, opts []CallOption) error {
	o, err := w.region(window.Get, "dst", dst, rank, offset)
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		copy(dst.Bytes(), mem[o.Offset:o.Offset+o.Len])
	}
	return err
}

// fetchAt is a direct fetch-and-op on mem, rank's window.
func (w *Window) fetchAt(operand, result *Tensor, rank, offset int, op ReduceOp, mem []byte, opts []CallOption) error {
	err := w.checkAccumulate(window.FetchAndOp, operand, result, op)
	var o *window.Op
	if err == nil {
		o, err = w.region(window.FetchAndOp, "operand", operand, rank, offset)
	}
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		old := window.FetchAndOpWord(mem[o.Offset:o.Offset+8], op.Kind(), operand.DType(), operand.Bytes())
		binary.NativeEndian.PutUint64(result.Bytes(), old)
	}
	return err
}

// swapAt is a direct compare-and-swap on mem, rank's window.
func (w *Window) swapAt(value, compare, result *Tensor, rank, offset int, mem []byte, opts []CallOption) error {
	err := checkSwap(value, compare, result)
	var o *window.Op
	if err == nil {
		o, err = w.region(window.CompareAndSwap, "value", value, rank, offset)
	}
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		old := window.CompareAndSwapWord(mem[o.Offset:o.Offset+8], value.Bytes(), compare.Bytes())
		binary.NativeEndian.PutUint64(result.Bytes(), old)
	}
	return err
}

// usableDirect reports why a direct operation on rank cannot go now: the
// window is closed or revoked, or what came before it through the actor
// did not complete.
func (w *Window) usableDirect(rank int, opts []CallOption) error {
	if err := w.unusable(); err != nil {
		return err
	}
	if err := w.revoked.Load(); err != nil {
		return *err
	}
	if err := w.settle(rank, opts); err != nil {
		var oe *OpError
		if errors.As(err, &oe) {
			return errors.Unwrap(oe.Err) // the flush's cause, without its "window N:", which the caller adds
		}
		return err
	}
	return nil
}

// unmapPeers undoes mapPeers.
func (w *Window) unmapPeers() {
	for _, unmap := range w.unmaps {
		unmap()
	}
	w.unmaps = nil
	clear(w.direct)
}
