package nccl

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// call is one NCCL call of an operation, as gnc.h's struct gnc_call.
type call struct {
	kind, peer, dtype int32
	send, recv        uint64 // device addresses
	count             uint64 // elements of dtype
}

// The kinds of call, numbered as gnc.h numbers them.
const (
	callAllReduce = iota
	callBroadcast
	callReduce
	callAllGather
	callReduceScatter
	callSend
	callRecv
)

// NCCL's data types (ncclDataType_t) and operators (ncclRedOp_t).
const (
	ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64 = 0, 1, 2, 3, 4, 5
	ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16               = 6, 7, 8, 9

	ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg = 0, 1, 2, 3, 4
)

var ncclTypes = map[tensor.DType]int32{
	tensor.Int8: ncclInt8, tensor.Uint8: ncclUint8, tensor.Int32: ncclInt32, tensor.Uint32: ncclUint32,
	tensor.Int64: ncclInt64, tensor.Uint64: ncclUint64, tensor.Float16: ncclFloat16,
	tensor.Float32: ncclFloat32, tensor.Float64: ncclFloat64, tensor.BFloat16: ncclBfloat16,
}

// reduction is an operation's NCCL operator: op, or a premultiplied sum
// by scalar, which gnc_run creates and destroys around the calls.
type reduction struct {
	op     int
	premul bool
	scalar [8]byte
}

// ncclType returns NCCL's type for a reduction over dt. Operations that
// only move data move bytes, so any dtype suits them.
func ncclType(dt tensor.DType) (int32, error) {
	t, ok := ncclTypes[dt]
	if !ok {
		return 0, fmt.Errorf("%w: NCCL cannot reduce dtype %v (it reduces int8, uint8, int32, uint32, "+
			"int64, uint64, float16, bfloat16, float32 and float64)", ErrUnsupported, dt)
	}
	return t, nil
}

func ncclReduction(op reduce.Op, dt tensor.DType) (reduction, error) {
	switch op.Kind() {
	case reduce.Sum:
		return reduction{op: ncclSum}, nil
	case reduce.Product:
		return reduction{op: ncclProd}, nil
	case reduce.Min:
		return reduction{op: ncclMin}, nil
	case reduce.Max:
		return reduction{op: ncclMax}, nil
	case reduce.Avg:
		return reduction{op: ncclAvg}, nil
	case reduce.PreMulSum:
		r := reduction{premul: true}
		f := op.Factor()
		switch dt {
		case tensor.Float16:
			binary.LittleEndian.PutUint16(r.scalar[:], uint16(tensor.Float16FromFloat64(f)))
		case tensor.BFloat16:
			binary.LittleEndian.PutUint16(r.scalar[:], uint16(tensor.BFloat16FromFloat64(f)))
		case tensor.Float32:
			binary.LittleEndian.PutUint32(r.scalar[:], math.Float32bits(float32(f)))
		case tensor.Float64:
			binary.LittleEndian.PutUint64(r.scalar[:], math.Float64bits(f))
		default:
			return r, commerr.Invalid("nccl: premul_sum needs a floating-point dtype, not %v", dt)
		}
		return r, nil
	case reduce.BAnd, reduce.BOr, reduce.BXor:
		return reduction{}, fmt.Errorf("%w: NCCL has no bitwise reductions (%v)", ErrUnsupported, op)
	}
	return reduction{}, commerr.Invalid("nccl: invalid reduction %v", op)
}

// plan returns the calls that run op on this rank, in one group, and its
// reduction.
func (c *comm) plan(op *backend.Op) ([]call, reduction, error) {
	p := planner{c: c, op: op}
	var red reduction
	if op.Schedule != nil {
		return nil, red, fmt.Errorf("%w: custom schedules (Comm.Custom); NCCL runs its own", ErrUnsupported)
	}
	var err error
	switch op.Kind {
	case algorithms.AllReduce, algorithms.Reduce, algorithms.ReduceScatter:
		if p.dtype, err = ncclType(op.DType); err != nil {
			return nil, red, err
		}
		if red, err = ncclReduction(op.Reduce, op.DType); err != nil {
			return nil, red, err
		}
		p.size = 1
	case algorithms.Barrier:
		p.dtype, p.size, red = ncclUint8, 1, reduction{op: ncclSum}
	default:
		p.dtype, p.size = ncclUint8, op.DType.Size()
	}
	switch op.Kind {
	case algorithms.AllReduce:
		p.add(callAllReduce, -1, p.ptr(op.Inputs[0]), p.ptr(op.Outputs[0]), op.Counts[0])
	case algorithms.Reduce:
		send := p.ptr(op.Inputs[0])
		recv := send // NCCL reads the receive buffer on the root only
		if op.Root == c.rank {
			recv = p.ptr(op.Outputs[0])
		}
		p.add(callReduce, op.Root, send, recv, op.Counts[0])
	case algorithms.Broadcast:
		buf := p.ptr(op.Outputs[0])
		p.add(callBroadcast, op.Root, buf, buf, op.Counts[0])
	case algorithms.AllGather:
		p.allGather()
	case algorithms.ReduceScatter:
		p.reduceScatter()
	case algorithms.AllToAll:
		for q := range c.size {
			p.add(callSend, q, p.ptr(op.Inputs[q]), 0, op.Send[q])
			p.add(callRecv, q, 0, p.ptr(op.Outputs[q]), op.Recv[q])
		}
	case algorithms.Gather:
		if c.rank == op.Root {
			for q := range c.size {
				p.add(callRecv, q, 0, p.ptr(op.Outputs[q]), op.Counts[q])
			}
		}
		p.add(callSend, op.Root, p.ptr(op.Inputs[0]), 0, op.Counts[c.rank])
	case algorithms.Scatter:
		if c.rank == op.Root {
			for q := range c.size {
				p.add(callSend, q, p.ptr(op.Inputs[q]), 0, op.Counts[q])
			}
		}
		p.add(callRecv, op.Root, 0, p.ptr(op.Outputs[0]), op.Counts[c.rank])
	case algorithms.Barrier:
		buf := c.barrier.Ptr()
		p.add(callAllReduce, -1, buf, buf, 1)
	case 0:
		p.p2p()
	default:
		return nil, red, fmt.Errorf("%w: %s", ErrUnsupported, op.Name)
	}
	return p.calls, red, p.err
}

// planner gathers an operation's calls, and the first error in its
// tensors.
type planner struct {
	c     *comm
	op    *backend.Op
	dtype int32 // of every call
	size  int   // bytes per element counted: 1 where elements are NCCL's, else the dtype's size
	calls []call
	err   error
}

// add adds a call of count elements, none where count is 0: NCCL would
// do nothing with it, and every rank skips it alike.
func (p *planner) add(kind, peer int, send, recv uint64, count int) {
	if count == 0 || p.err != nil {
		return
	}
	p.calls = append(p.calls, call{kind: int32(kind), peer: int32(peer), dtype: p.dtype,
		send: send, recv: recv, count: uint64(count * p.size)})
}

// ptr returns the device address of t's first element.
func (p *planner) ptr(t *tensor.Tensor) uint64 {
	if p.err != nil {
		return 0
	}
	if t.Device() != p.c.dev {
		p.err = commerr.Invalid("nccl: a tensor on %v in a communicator on %v", t.Device(), p.c.dev)
		return 0
	}
	m, off, err := cuda.TensorMemory(t)
	if err != nil {
		p.err = commerr.Invalid("nccl: %v", err)
		return 0
	}
	return m.Ptr() + uint64(off)
}

// allGather gathers with one ncclAllGather where the outputs are one
// uniform buffer, and otherwise broadcasts each rank's input.
func (p *planner) allGather() {
	op, c := p.op, p.c
	if base, ok := p.uniform(op.Outputs, op.Counts); ok {
		p.add(callAllGather, -1, p.ptr(op.Inputs[0]), base, op.Counts[0])
		return
	}
	for q := range c.size {
		send := p.ptr(op.Outputs[q])
		if q == c.rank {
			send = p.ptr(op.Inputs[0])
		}
		p.add(callBroadcast, q, send, p.ptr(op.Outputs[q]), op.Counts[q])
	}
}

// reduceScatter reduces with one ncclReduceScatter where the inputs are
// one uniform buffer, and otherwise reduces each block to its rank.
func (p *planner) reduceScatter() {
	op, c := p.op, p.c
	if base, ok := p.uniform(op.Inputs, op.Counts); ok {
		p.add(callReduceScatter, -1, base, p.ptr(op.Outputs[0]), op.Counts[0])
		return
	}
	for q := range c.size {
		send := p.ptr(op.Inputs[q])
		recv := send
		if q == c.rank {
			recv = p.ptr(op.Outputs[0])
		}
		p.add(callReduce, q, send, recv, op.Counts[q])
	}
}

// uniform returns the address of blocks when they have equal counts and
// lie back to back in one allocation, as NCCL's all-gather and
// reduce-scatter lay out theirs.
func (p *planner) uniform(blocks []*tensor.Tensor, counts []int) (uint64, bool) {
	if len(blocks) == 0 || slices.ContainsFunc(counts, func(n int) bool { return n != counts[0] }) {
		return 0, false
	}
	first, off := blocks[0].Memory()
	for _, b := range blocks[1:] {
		m, o := b.Memory()
		if m != first || o != off+blocks[0].NBytes() {
			return 0, false
		}
		off = o
	}
	return p.ptr(blocks[0]), true
}

// p2p sends and receives op's messages, in order: NCCL matches the k-th
// send from a to b with b's k-th receive from a, whatever the tags.
func (p *planner) p2p() {
	for _, m := range p.op.P2P {
		p.size = m.Tensor.DType().Size()
		if m.Send {
			p.add(callSend, m.Peer, p.ptr(m.Tensor), 0, m.Tensor.Numel())
		} else {
			p.add(callRecv, m.Peer, 0, p.ptr(m.Tensor), m.Tensor.Numel())
		}
	}
}
