package devcomm

import (
	"fmt"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// grouped reports whether op runs through the device group: the
// collectives whose every block is one rank's, on tensors of the
// communicator's context. Gathers, scatters, point-to-point messages
// and custom schedules are staged.
func (b *Backend) grouped(op *backend.Op) bool {
	if b.group == nil || op.Schedule != nil || op.P2P != nil {
		return false
	}
	p := b.group.Size()
	var ins, outs int // the blocks the collective's layout has
	switch op.Name {
	case backend.OpBarrier:
	case backend.OpAllReduce:
		ins, outs = 1, 1
	case backend.OpReduce:
		ins, outs = 1, len(op.Outputs) // the root's tensor is its output too
	case backend.OpBroadcast:
		outs = 1
	case backend.OpAllGather, backend.OpAllGatherSingle, backend.OpAllGatherV:
		ins, outs = 1, p
	case backend.OpReduceScatter, backend.OpReduceScatterSingle, backend.OpReduceScatterV:
		ins, outs = p, 1
	case backend.OpAllToAll, backend.OpAllToAllSingle, backend.OpAllToAllV:
		ins, outs = p, p
	default:
		return false
	}
	if len(op.Inputs) != ins || len(op.Outputs) != outs {
		return false
	}
	for _, ts := range [][]*tensor.Tensor{op.Inputs, op.Outputs} {
		for _, t := range ts {
			if _, _, ok := deviceRange(t); !ok {
				return false
			}
		}
	}
	return true
}

// deviceRange returns a tensor's device memory and byte offset.
func deviceRange(t *tensor.Tensor) (*cuda.DeviceMemory, int, bool) {
	if t == nil {
		return nil, 0, false
	}
	dm, off, err := cuda.TensorMemory(t)
	return dm, off, err == nil || t.NBytes() == 0
}

// runGroup queues j's collective on the stream: each rank copies what it
// contributes into its group buffer, a barrier, each reads and reduces
// what it needs from the others' buffers, a barrier; window by window
// where the data outgrow the buffers.
func (b *Backend) runGroup(j *job) error {
	if err := b.waitCaller(j); err != nil {
		return err
	}
	r := groupRun{b: b, op: j.op, s: b.s, rank: j.op.Root}
	var err error
	switch j.op.Name {
	case backend.OpBarrier:
		err = b.group.Barrier(b.s)
	case backend.OpAllReduce, backend.OpReduce:
		err = r.reduce()
	case backend.OpBroadcast:
		err = r.broadcast()
	case backend.OpAllGather, backend.OpAllGatherSingle, backend.OpAllGatherV:
		err = r.allGather()
	case backend.OpReduceScatter, backend.OpReduceScatterSingle, backend.OpReduceScatterV:
		err = r.reduceScatter()
	default:
		err = r.allToAll()
	}
	if err == nil {
		err = b.record(j)
	}
	if err != nil {
		return fmt.Errorf("queuing %s on the device: %w", j.op.Name, err)
	}
	j.last = b.group.Barriers()
	j.start = time.Now()
	j.done.Started()
	b.ending.push(j)
	return nil
}

// groupRun is one collective being queued.
type groupRun struct {
	b    *Backend
	op   *backend.Op
	s    *cuda.Stream
	rank int // the root, for rooted collectives
}

func (r *groupRun) me() int        { return r.b.group.Rank() }
func (r *groupRun) size() int      { return r.b.group.Size() }
func (r *groupRun) es() int        { return r.op.DType.Size() }
func (r *groupRun) barrier() error { return r.b.group.Barrier(r.s) }

// buffer returns rank q's group buffer and the byte offset of element
// slot in it.
func (r *groupRun) buffer(q, slot int) (*cuda.DeviceMemory, int) {
	m, off := r.b.group.Buffer(q)
	return m, off + slot*r.es()
}

// window is how many elements of each of blocks fit the buffer.
func (r *groupRun) window(blocks int) int {
	return max(r.b.group.BufferBytes()/r.es()/blocks, 1)
}

// copyIn copies n elements of t from element from into this rank's
// buffer at slot.
func (r *groupRun) copyIn(slot int, t *tensor.Tensor, from, n int) error {
	if n <= 0 {
		return nil
	}
	mem, off, _ := deviceRange(t)
	dst, dstOff := r.buffer(r.me(), slot)
	return r.s.CopyDtoD(dst, dstOff, mem, off+from*r.es(), n*r.es())
}

// copyOut copies n elements from rank q's buffer at slot into t from
// element to.
func (r *groupRun) copyOut(t *tensor.Tensor, to, q, slot, n int) error {
	if n <= 0 {
		return nil
	}
	mem, off, _ := deviceRange(t)
	src, srcOff := r.buffer(q, slot)
	return r.s.CopyDtoD(mem, off+to*r.es(), src, srcOff, n*r.es())
}

// fold reduces every rank's n elements at slot, in one kernel, and
// stores the result there in the buffers of ranks [first, first+dests).
func (r *groupRun) fold(slot, n, first, dests int) error {
	if n <= 0 {
		return nil
	}
	return r.s.Fold(r.op.Reduce, r.op.DType, r.b.group.Buffers(), r.size(), first, dests, slot*r.es(), n)
}

// share splits n elements among the ranks: rank q reduces [lo, hi).
func (r *groupRun) share(n, q int) (lo, hi int) {
	p := r.size()
	return n * q / p, n * (q + 1) / p
}

// reduce is all-reduce, or reduce into the root: each rank reduces its
// share of a window of every rank's elements and stores it in every
// buffer (all-reduce) or the root's, which then holds the whole window.
// After the second barrier no rank touches another's buffer until the
// next window's first, so that the copy out needs no third: per window,
// a copy in, a barrier, one kernel, a barrier and a copy out.
func (r *groupRun) reduce() error {
	in := r.op.Inputs[0]
	n, w := in.Numel(), r.window(1)
	first, dests := 0, r.size()
	if r.op.Name == backend.OpReduce {
		first, dests = r.rank, 1
	}
	gathers := r.op.Name == backend.OpAllReduce || r.me() == r.rank
	for lo := 0; lo < n; lo += w {
		c := min(w, n-lo)
		if err := r.copyIn(0, in, lo, c); err != nil {
			return err
		}
		if err := r.barrier(); err != nil {
			return err
		}
		a, z := r.share(c, r.me())
		if err := r.fold(a, z-a, first, dests); err != nil {
			return err
		}
		if err := r.barrier(); err != nil {
			return err
		}
		if gathers {
			if err := r.copyOut(r.op.Outputs[0], lo, r.me(), 0, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// broadcast copies windows of the root's tensor through its buffer.
func (r *groupRun) broadcast() error {
	t := r.op.Outputs[0]
	n, w := t.Numel(), r.window(1)
	for lo := 0; lo < n; lo += w {
		c := min(w, n-lo)
		if r.me() == r.rank {
			if err := r.copyIn(0, t, lo, c); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
		if r.me() != r.rank {
			if err := r.copyOut(r.op.Outputs[0], lo, r.rank, 0, c); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
	}
	return nil
}

// longest is the largest of counts.
func longest(counts []int) int {
	n := 0
	for _, c := range counts {
		n = max(n, c)
	}
	return n
}

// allGather copies windows of every rank's input, through its buffer,
// into every rank's output block for it.
func (r *groupRun) allGather() error {
	counts := r.op.Counts
	n, w := longest(counts), r.window(1)
	for lo := 0; lo < n; lo += w {
		if err := r.copyIn(0, r.op.Inputs[0], lo, min(w, counts[r.me()]-lo)); err != nil {
			return err
		}
		if err := r.barrier(); err != nil {
			return err
		}
		for q := range r.size() {
			if err := r.copyOut(r.op.Outputs[q], lo, q, 0, min(w, counts[q]-lo)); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
	}
	return nil
}

// reduceScatter lays a window of each input block out in the buffer,
// block q at slot q×window; rank q reduces block q from every buffer.
func (r *groupRun) reduceScatter() error {
	counts := r.op.Counts
	n, w := longest(counts), r.window(r.size())
	for lo := 0; lo < n; lo += w {
		for q := range r.size() {
			if err := r.copyIn(q*w, r.op.Inputs[q], lo, min(w, counts[q]-lo)); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
		c := min(w, counts[r.me()]-lo)
		if err := r.fold(r.me()*w, c, r.me(), 1); err != nil {
			return err
		}
		mine, off := r.buffer(r.me(), r.me()*w)
		if c > 0 {
			out, outOff, _ := deviceRange(r.op.Outputs[0])
			if err := r.s.CopyDtoD(out, outOff+lo*r.es(), mine, off, c*r.es()); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
	}
	return nil
}

// allToAll lays a window of each input block out in the buffer, block q
// at slot q×window; rank q reads block q of every buffer.
func (r *groupRun) allToAll() error {
	send, recv := r.op.Send, r.op.Recv
	if send == nil { // the uniform forms: every block is Counts' one
		send, recv = r.op.Counts, r.op.Counts
	}
	n, w := max(longest(send), longest(recv)), r.window(r.size())
	for lo := 0; lo < n; lo += w {
		for q := range r.size() {
			if err := r.copyIn(q*w, r.op.Inputs[q], lo, min(w, send[q]-lo)); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
		for q := range r.size() {
			if err := r.copyOut(r.op.Outputs[q], lo, q, r.me()*w, min(w, recv[q]-lo)); err != nil {
				return err
			}
		}
		if err := r.barrier(); err != nil {
			return err
		}
	}
	return nil
}
