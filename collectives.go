package gocomms

import (
	"context"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
)

// Every collective has a blocking form, which takes a context (its deadline
// bounds the operation; its cancellation cancels the operation on every
// rank), and an async form returning a *Work. Both validate their arguments
// before anything moves.

// AllReduce reduces t across ranks, in place: every rank ends with the result.
func (c *Comm) AllReduce(ctx context.Context, t *Tensor, op ReduceOp, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allReduce(s, t, op) })
}

// AllReduceAsync is the async form of AllReduce.
func (c *Comm) AllReduceAsync(t *Tensor, op ReduceOp, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allReduce(s, t, op) })
}

func (c *Comm) allReduce(s *roomOp, t *Tensor, op ReduceOp) error {
	return c.whole(s, Op{Name: OpAllReduce, Kind: algorithms.AllReduce, Reduce: op, Root: -1, InPlace: true}, t, asInput|asOutput)
}

// Reduce reduces t across ranks into root's t. Other ranks' tensors are
// inputs only and are left unchanged.
func (c *Comm) Reduce(ctx context.Context, t *Tensor, root int, op ReduceOp, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.reduce(s, t, root, op) })
}

// ReduceAsync is the async form of Reduce.
func (c *Comm) ReduceAsync(t *Tensor, root int, op ReduceOp, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.reduce(s, t, root, op) })
}

func (c *Comm) reduce(s *roomOp, t *Tensor, root int, op ReduceOp) error {
	// The root's tensor is also the output, which the result overwrites.
	atRoot := c.cfg.Rank == root
	on := asInput
	if atRoot {
		on |= asOutput
	}
	return c.whole(s, Op{Name: OpReduce, Kind: algorithms.Reduce, Reduce: op, Root: root, InPlace: atRoot}, t, on)
}

// Broadcast copies root's t into every rank's t.
func (c *Comm) Broadcast(ctx context.Context, t *Tensor, root int, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.broadcast(s, t, root) })
}

// BroadcastAsync is the async form of Broadcast.
func (c *Comm) BroadcastAsync(t *Tensor, root int, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.broadcast(s, t, root) })
}

func (c *Comm) broadcast(s *roomOp, t *Tensor, root int) error {
	return c.whole(s, Op{Name: OpBroadcast, Kind: algorithms.Broadcast, Root: root}, t, asOutput)
}

// AllGather gathers every rank's input into outputs[rank] on every rank.
func (c *Comm) AllGather(ctx context.Context, outputs []*Tensor, input *Tensor, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allGather(s, OpAllGather, outputs, input, true) })
}

// AllGatherAsync is the async form of AllGather.
func (c *Comm) AllGatherAsync(outputs []*Tensor, input *Tensor, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allGather(s, OpAllGather, outputs, input, true) })
}

// AllGatherV is AllGather where ranks contribute different element counts:
// outputs[q] has rank q's count, and outputs[rank] input's.
func (c *Comm) AllGatherV(ctx context.Context, outputs []*Tensor, input *Tensor, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allGather(s, OpAllGatherV, outputs, input, false) })
}

// AllGatherVAsync is the async form of AllGatherV.
func (c *Comm) AllGatherVAsync(outputs []*Tensor, input *Tensor, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allGather(s, OpAllGatherV, outputs, input, false) })
}

// AllGatherSingle gathers every rank's input into consecutive blocks of
// output, which holds Size() times input's elements.
func (c *Comm) AllGatherSingle(ctx context.Context, output, input *Tensor, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allGatherSingle(s, output, input) })
}

// AllGatherSingleAsync is the async form of AllGatherSingle.
func (c *Comm) AllGatherSingleAsync(output, input *Tensor, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allGatherSingle(s, output, input) })
}

func (c *Comm) allGather(s *roomOp, name OpName, outputs []*Tensor, input *Tensor, uniform bool) error {
	return c.blocks(s, blocked{op: Op{Name: name, Kind: algorithms.AllGather, Root: -1}, mine: input, gathers: true, list: outputs, varies: !uniform})
}

func (c *Comm) allGatherSingle(s *roomOp, output, input *Tensor) error {
	return c.blocks(s, blocked{op: Op{Name: OpAllGatherSingle, Kind: algorithms.AllGather, Root: -1}, mine: input, gathers: true, whole: output, single: true})
}

// ReduceScatter reduces inputs[q] across ranks into rank q's output.
func (c *Comm) ReduceScatter(ctx context.Context, output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.reduceScatter(s, OpReduceScatter, output, inputs, op, true) })
}

// ReduceScatterAsync is the async form of ReduceScatter.
func (c *Comm) ReduceScatterAsync(output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.reduceScatter(s, OpReduceScatter, output, inputs, op, true) })
}

// ReduceScatterV is ReduceScatter where rank q's block has its own count:
// inputs[q] has rank q's count, and inputs[rank] output's.
func (c *Comm) ReduceScatterV(ctx context.Context, output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.reduceScatter(s, OpReduceScatterV, output, inputs, op, false) })
}

// ReduceScatterVAsync is the async form of ReduceScatterV.
func (c *Comm) ReduceScatterVAsync(output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.reduceScatter(s, OpReduceScatterV, output, inputs, op, false) })
}

// ReduceScatterSingle reduces consecutive blocks of input across ranks, block
// q into rank q's output; input holds Size() times output's elements.
func (c *Comm) ReduceScatterSingle(ctx context.Context, output, input *Tensor, op ReduceOp, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.reduceScatterSingle(s, output, input, op) })
}

// ReduceScatterSingleAsync is the async form of ReduceScatterSingle.
func (c *Comm) ReduceScatterSingleAsync(output, input *Tensor, op ReduceOp, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.reduceScatterSingle(s, output, input, op) })
}

func (c *Comm) reduceScatter(s *roomOp, name OpName, output *Tensor, inputs []*Tensor, op ReduceOp, uniform bool) error {
	return c.blocks(s, blocked{op: Op{Name: name, Kind: algorithms.ReduceScatter, Reduce: op, Root: -1}, mine: output, list: inputs, varies: !uniform})
}

func (c *Comm) reduceScatterSingle(s *roomOp, output, input *Tensor, op ReduceOp) error {
	return c.blocks(s, blocked{op: Op{Name: OpReduceScatterSingle, Kind: algorithms.ReduceScatter, Reduce: op, Root: -1}, mine: output, whole: input, single: true})
}

// AllToAll sends inputs[q] to rank q, which receives it into outputs[rank].
func (c *Comm) AllToAll(ctx context.Context, outputs, inputs []*Tensor, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allToAll(s, outputs, inputs) })
}

// AllToAllAsync is the async form of AllToAll.
func (c *Comm) AllToAllAsync(outputs, inputs []*Tensor, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allToAll(s, outputs, inputs) })
}

func (c *Comm) allToAll(s *roomOp, outputs, inputs []*Tensor) error {
	s.Op = Op{Name: OpAllToAll, Kind: algorithms.AllToAll, Root: -1}
	if len(inputs) == 0 || inputs[0] == nil {
		return commerr.Invalid("inputs has no first tensor")
	}
	s.DType = inputs[0].DType()
	if err := c.checkTensors("inputs", inputs, c.cfg.Size, s.DType); err != nil {
		return err
	}
	if err := c.checkTensors("outputs", outputs, c.cfg.Size, s.DType); err != nil {
		return err
	}
	size := c.cfg.Size
	s.blocks.counts = resize(s.blocks.counts, 2*size)
	s.Send = numelsInto(s.blocks.counts[:size:size], inputs)
	s.Recv = numelsInto(s.blocks.counts[size:], outputs)
	s.Inputs, s.Outputs = inputs, outputs
	return nil
}

// AllToAllSingle splits input into Size() equal blocks and sends block q to
// rank q, which receives it into block rank of its output.
func (c *Comm) AllToAllSingle(ctx context.Context, output, input *Tensor, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allToAllSingle(s, output, input) })
}

// AllToAllSingleAsync is the async form of AllToAllSingle.
func (c *Comm) AllToAllSingleAsync(output, input *Tensor, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allToAllSingle(s, output, input) })
}

func (c *Comm) allToAllSingle(s *roomOp, output, input *Tensor) error {
	if err := c.pair(s, Op{Name: OpAllToAllSingle, Kind: algorithms.AllToAll, Root: -1}, output, input); err != nil {
		return err
	}
	n := input.Numel()
	if output.Numel() != n || n%c.cfg.Size != 0 {
		return commerr.Invalid("input and output must have equal element counts divisible by %d ranks, got %d and %d", c.cfg.Size, n, output.Numel())
	}
	s.blocks.counts = repeatInto(s.blocks.counts, n/c.cfg.Size, c.cfg.Size)
	return c.allToAllBlocks(s, output, input, s.blocks.counts, s.blocks.counts)
}

// AllToAllV sends rows of input to each rank as inSplits says (rows along
// dimension 0), and receives rows from each rank into output as outSplits
// says. Rank q's inSplits[r] must equal rank r's outSplits[q].
func (c *Comm) AllToAllV(ctx context.Context, output, input *Tensor, outSplits, inSplits []int, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.allToAllV(s, output, input, outSplits, inSplits) })
}

// AllToAllVAsync is the async form of AllToAllV.
func (c *Comm) AllToAllVAsync(output, input *Tensor, outSplits, inSplits []int, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.allToAllV(s, output, input, outSplits, inSplits) })
}

func (c *Comm) allToAllV(s *roomOp, output, input *Tensor, outSplits, inSplits []int) error {
	if err := c.pair(s, Op{Name: OpAllToAllV, Kind: algorithms.AllToAll, Root: -1}, output, input); err != nil {
		return err
	}
	size := c.cfg.Size
	s.blocks.counts = resize(s.blocks.counts, 2*size)
	send, recv := s.blocks.counts[:size:size], s.blocks.counts[size:]
	if err := c.splitElems(send, "input", input, inSplits); err != nil {
		return err
	}
	if err := c.splitElems(recv, "output", output, outSplits); err != nil {
		return err
	}
	return c.allToAllBlocks(s, output, input, recv, send)
}

// pair sets s's Op to op and checks the input and output of an all-to-all
// over blocks of one tensor a side.
func (c *Comm) pair(s *roomOp, op Op, output, input *Tensor) error {
	if err := c.begin(s, op, "input", input); err != nil {
		return err
	}
	return c.checkLike("output", output, "input", s.DType)
}

// splitElems turns row splits into element counts in elems, one per rank,
// checking they fit t.
func (c *Comm) splitElems(elems []int, what string, t *Tensor, splits []int) error {
	if len(splits) != c.cfg.Size {
		return commerr.Invalid("%s splits have %d entries, want %d", what, len(splits), c.cfg.Size)
	}
	row := t.RowElems()
	total := 0
	for q, s := range splits {
		if s < 0 {
			return commerr.Invalid("%s split %d is negative (%d)", what, q, s)
		}
		elems[q] = s * row
		total += s
	}
	if total > t.Rows() {
		return commerr.Invalid("%s splits sum to %d rows, tensor has %d", what, total, t.Rows())
	}
	return nil
}

// allToAllBlocks sets s's Inputs and Outputs to the blocks of input and
// output that send and recv count.
func (c *Comm) allToAllBlocks(s *roomOp, output, input *Tensor, recv, send []int) error {
	size := c.cfg.Size
	views, ptrs := s.blocks.room(2 * size)
	if err := cut(views[:size], ptrs[:size], input, send); err != nil {
		return err
	}
	if err := cut(views[size:], ptrs[size:], output, recv); err != nil {
		return err
	}
	s.Send, s.Recv, s.Inputs, s.Outputs = send, recv, ptrs[:size:size], ptrs[size:]
	return nil
}

// Gather collects every rank's input into root's outputs[rank]. outputs is
// read on root only.
func (c *Comm) Gather(ctx context.Context, outputs []*Tensor, input *Tensor, root int, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.gather(s, outputs, input, root) })
}

// GatherAsync is the async form of Gather.
func (c *Comm) GatherAsync(outputs []*Tensor, input *Tensor, root int, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.gather(s, outputs, input, root) })
}

func (c *Comm) gather(s *roomOp, outputs []*Tensor, input *Tensor, root int) error {
	return c.blocks(s, blocked{op: Op{Name: OpGather, Kind: algorithms.Gather, Root: root}, mine: input, gathers: true, list: outputs})
}

// GatherSingle collects every rank's input into consecutive blocks of
// root's output, which holds Size() times input's elements; output is
// read on root only.
func (c *Comm) GatherSingle(ctx context.Context, output, input *Tensor, root int, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.gatherSingle(s, output, input, root) })
}

// GatherSingleAsync is the async form of GatherSingle.
func (c *Comm) GatherSingleAsync(output, input *Tensor, root int, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.gatherSingle(s, output, input, root) })
}

// gatherSingle is gather into the blocks of root's output, as torchcomms'
// default gather_single.
func (c *Comm) gatherSingle(s *roomOp, output, input *Tensor, root int) error {
	return c.blocks(s, blocked{op: Op{Name: OpGatherSingle, Kind: algorithms.Gather, Root: root}, mine: input, gathers: true, whole: output, single: true})
}

// Scatter sends root's inputs[q] to rank q's output. inputs is read on root
// only.
func (c *Comm) Scatter(ctx context.Context, output *Tensor, inputs []*Tensor, root int, opts ...CallOption) error {
	return c.runLaid(ctx, opts, func(s *roomOp) error { return c.scatter(s, output, inputs, root) })
}

// ScatterAsync is the async form of Scatter.
func (c *Comm) ScatterAsync(output *Tensor, inputs []*Tensor, root int, opts ...CallOption) *Work {
	return c.startLaid(opts, func(s *roomOp) error { return c.scatter(s, output, inputs, root) })
}

func (c *Comm) scatter(s *roomOp, output *Tensor, inputs []*Tensor, root int) error {
	return c.blocks(s, blocked{op: Op{Name: OpScatter, Kind: algorithms.Scatter, Root: root}, mine: output, list: inputs})
}

// Barrier returns once every rank has entered it.
func (c *Comm) Barrier(ctx context.Context, opts ...CallOption) error {
	return c.runLaid(ctx, opts, barrier)
}

// BarrierAsync is the async form of Barrier.
func (c *Comm) BarrierAsync(opts ...CallOption) *Work {
	return c.startLaid(opts, barrier)
}

func barrier(s *roomOp) error {
	s.Op = barrierOp()
	return nil
}

func barrierOp() Op {
	return Op{Name: OpBarrier, Kind: algorithms.Barrier, Root: -1, DType: Uint8}
}
