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
	r := c.record()
	return c.runRecord(ctx, r, c.allReduce(&r.op, t, op), opts)
}

// AllReduceAsync is the async form of AllReduce.
func (c *Comm) AllReduceAsync(t *Tensor, op ReduceOp, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allReduce(&r.op, t, op), opts)
}

// roomOp is an Op with room for the counts and tensor lists of a
// collective, or the message of a send or receive, so that they come with
// its opRecord: inline for one tensor a side, else in blocks, whose room
// lasts across uses; a caller's list of tensors is used as it is.
type roomOp struct {
	Op
	count   [1]int
	in, out [1]*Tensor
	msg     [1]P2P
	blocks  blockRoom
}

// blockRoom holds the counts of a collective over blocks of its tensors,
// and views of those blocks.
type blockRoom struct {
	counts []int
	views  []Tensor
	ptrs   []*Tensor // &views[i]
}

// room returns room for n block views and pointers to them.
func (b *blockRoom) room(n int) ([]Tensor, []*Tensor) {
	b.views, b.ptrs = resize(b.views, n), resize(b.ptrs, n)
	return b.views, b.ptrs
}

// clear empties b, keeping its capacity but no tensor alive.
func (b *blockRoom) clear() {
	clear(b.views)
	clear(b.ptrs)
	b.counts, b.views, b.ptrs = b.counts[:0], b.views[:0], b.ptrs[:0]
}

// clear empties s for reuse, keeping no tensor alive.
func (s *roomOp) clear() {
	b := s.blocks
	b.clear()
	*s = roomOp{blocks: b}
}

// counts sets the Op's Counts to n alone.
func (s *roomOp) counts(n int) {
	s.count[0] = n
	s.Counts = s.count[:]
}

// inputs sets the Op's Inputs to t alone.
func (s *roomOp) inputs(t *Tensor) {
	s.in[0] = t
	s.Inputs = s.in[:]
}

// outputs sets the Op's Outputs to t alone.
func (s *roomOp) outputs(t *Tensor) {
	s.out[0] = t
	s.Outputs = s.out[:]
}

func (c *Comm) allReduce(s *roomOp, t *Tensor, op ReduceOp) error {
	s.Op = Op{Name: OpAllReduce, Kind: algorithms.AllReduce, Reduce: op, Root: -1, InPlace: true}
	if err := c.checkTensor("tensor", t); err != nil {
		return err
	}
	s.DType = t.DType()
	s.counts(t.Numel())
	s.inputs(t)
	s.outputs(t)
	return checkReduce(op, t.DType())
}

// Reduce reduces t across ranks into root's t. Other ranks' tensors are
// inputs only and are left unchanged.
func (c *Comm) Reduce(ctx context.Context, t *Tensor, root int, op ReduceOp, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.reduce(&r.op, t, root, op), opts)
}

// ReduceAsync is the async form of Reduce.
func (c *Comm) ReduceAsync(t *Tensor, root int, op ReduceOp, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.reduce(&r.op, t, root, op), opts)
}

func (c *Comm) reduce(s *roomOp, t *Tensor, root int, op ReduceOp) error {
	s.Op = Op{Name: OpReduce, Kind: algorithms.Reduce, Reduce: op, Root: root}
	if err := c.checkRank("root", root); err != nil {
		return err
	}
	if err := c.checkTensor("tensor", t); err != nil {
		return err
	}
	s.DType = t.DType()
	s.counts(t.Numel())
	s.inputs(t)
	if c.cfg.Rank == root {
		s.outputs(t)
		s.InPlace = true
	}
	return checkReduce(op, t.DType())
}

// Broadcast copies root's t into every rank's t.
func (c *Comm) Broadcast(ctx context.Context, t *Tensor, root int, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.broadcast(&r.op, t, root), opts)
}

// BroadcastAsync is the async form of Broadcast.
func (c *Comm) BroadcastAsync(t *Tensor, root int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.broadcast(&r.op, t, root), opts)
}

func (c *Comm) broadcast(s *roomOp, t *Tensor, root int) error {
	s.Op = Op{Name: OpBroadcast, Kind: algorithms.Broadcast, Root: root}
	if err := c.checkRank("root", root); err != nil {
		return err
	}
	if err := c.checkTensor("tensor", t); err != nil {
		return err
	}
	s.DType = t.DType()
	s.counts(t.Numel())
	s.outputs(t)
	return nil
}

// AllGather gathers every rank's input into outputs[rank] on every rank.
func (c *Comm) AllGather(ctx context.Context, outputs []*Tensor, input *Tensor, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.allGather(&r.op, OpAllGather, outputs, input, true), opts)
}

// AllGatherAsync is the async form of AllGather.
func (c *Comm) AllGatherAsync(outputs []*Tensor, input *Tensor, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allGather(&r.op, OpAllGather, outputs, input, true), opts)
}

// AllGatherV is AllGather where ranks contribute different element counts:
// outputs[q] has rank q's count, and outputs[rank] input's.
func (c *Comm) AllGatherV(ctx context.Context, outputs []*Tensor, input *Tensor, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.allGather(&r.op, OpAllGatherV, outputs, input, false), opts)
}

// AllGatherVAsync is the async form of AllGatherV.
func (c *Comm) AllGatherVAsync(outputs []*Tensor, input *Tensor, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allGather(&r.op, OpAllGatherV, outputs, input, false), opts)
}

// AllGatherSingle gathers every rank's input into consecutive blocks of
// output, which holds Size() times input's elements.
func (c *Comm) AllGatherSingle(ctx context.Context, output, input *Tensor, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.allGatherSingle(&r.op, output, input), opts)
}

// AllGatherSingleAsync is the async form of AllGatherSingle.
func (c *Comm) AllGatherSingleAsync(output, input *Tensor, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allGatherSingle(&r.op, output, input), opts)
}

func (c *Comm) allGather(s *roomOp, name OpName, outputs []*Tensor, input *Tensor, uniform bool) error {
	s.Op = Op{Name: name, Kind: algorithms.AllGather, Root: -1}
	if err := c.checkTensor("input", input); err != nil {
		return err
	}
	s.DType = input.DType()
	if err := c.checkTensors("outputs", outputs, c.cfg.Size, s.DType); err != nil {
		return err
	}
	s.blocks.counts = numelsInto(s.blocks.counts, outputs)
	s.Counts = s.blocks.counts
	for q, n := range s.Counts {
		if (uniform || q == c.cfg.Rank) && n != input.Numel() {
			return commerr.Invalid("outputs[%d] has %d elements, input %d", q, n, input.Numel())
		}
	}
	s.inputs(input)
	s.Outputs = outputs
	return nil
}

func (c *Comm) allGatherSingle(s *roomOp, output, input *Tensor) error {
	s.Op = Op{Name: OpAllGatherSingle, Kind: algorithms.AllGather, Root: -1}
	if err := c.checkTensor("input", input); err != nil {
		return err
	}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	s.DType = input.DType()
	if err := checkSameDType("output", output, s.DType); err != nil {
		return err
	}
	if output.Numel() != c.cfg.Size*input.Numel() {
		return commerr.Invalid("output has %d elements, want %d ranks × %d", output.Numel(), c.cfg.Size, input.Numel())
	}
	s.blocks.counts = repeatInto(s.blocks.counts, input.Numel(), c.cfg.Size)
	s.Counts = s.blocks.counts
	s.inputs(input)
	views, ptrs := s.blocks.room(c.cfg.Size)
	if err := cut(views, ptrs, output, s.Counts); err != nil {
		return err
	}
	s.Outputs = ptrs
	return nil
}

// ReduceScatter reduces inputs[q] across ranks into rank q's output.
func (c *Comm) ReduceScatter(ctx context.Context, output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.reduceScatter(&r.op, OpReduceScatter, output, inputs, op, true), opts)
}

// ReduceScatterAsync is the async form of ReduceScatter.
func (c *Comm) ReduceScatterAsync(output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.reduceScatter(&r.op, OpReduceScatter, output, inputs, op, true), opts)
}

// ReduceScatterV is ReduceScatter where rank q's block has its own count:
// inputs[q] has rank q's count, and inputs[rank] output's.
func (c *Comm) ReduceScatterV(ctx context.Context, output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.reduceScatter(&r.op, OpReduceScatterV, output, inputs, op, false), opts)
}

// ReduceScatterVAsync is the async form of ReduceScatterV.
func (c *Comm) ReduceScatterVAsync(output *Tensor, inputs []*Tensor, op ReduceOp, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.reduceScatter(&r.op, OpReduceScatterV, output, inputs, op, false), opts)
}

// ReduceScatterSingle reduces consecutive blocks of input across ranks, block
// q into rank q's output; input holds Size() times output's elements.
func (c *Comm) ReduceScatterSingle(ctx context.Context, output, input *Tensor, op ReduceOp, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.reduceScatterSingle(&r.op, output, input, op), opts)
}

// ReduceScatterSingleAsync is the async form of ReduceScatterSingle.
func (c *Comm) ReduceScatterSingleAsync(output, input *Tensor, op ReduceOp, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.reduceScatterSingle(&r.op, output, input, op), opts)
}

func (c *Comm) reduceScatter(s *roomOp, name OpName, output *Tensor, inputs []*Tensor, op ReduceOp, uniform bool) error {
	s.Op = Op{Name: name, Kind: algorithms.ReduceScatter, Reduce: op, Root: -1}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	s.DType = output.DType()
	if err := c.checkTensors("inputs", inputs, c.cfg.Size, s.DType); err != nil {
		return err
	}
	s.blocks.counts = numelsInto(s.blocks.counts, inputs)
	s.Counts = s.blocks.counts
	for q, n := range s.Counts {
		if (uniform || q == c.cfg.Rank) && n != output.Numel() {
			return commerr.Invalid("inputs[%d] has %d elements, output %d", q, n, output.Numel())
		}
	}
	s.Inputs = inputs
	s.outputs(output)
	return checkReduce(op, s.DType)
}

func (c *Comm) reduceScatterSingle(s *roomOp, output, input *Tensor, op ReduceOp) error {
	s.Op = Op{Name: OpReduceScatterSingle, Kind: algorithms.ReduceScatter, Reduce: op, Root: -1}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	if err := c.checkTensor("input", input); err != nil {
		return err
	}
	s.DType = output.DType()
	if err := checkSameDType("input", input, s.DType); err != nil {
		return err
	}
	if input.Numel() != c.cfg.Size*output.Numel() {
		return commerr.Invalid("input has %d elements, want %d ranks × %d", input.Numel(), c.cfg.Size, output.Numel())
	}
	s.blocks.counts = repeatInto(s.blocks.counts, output.Numel(), c.cfg.Size)
	s.Counts = s.blocks.counts
	views, ptrs := s.blocks.room(c.cfg.Size)
	if err := cut(views, ptrs, input, s.Counts); err != nil {
		return err
	}
	s.Inputs = ptrs
	s.outputs(output)
	return checkReduce(op, s.DType)
}

// AllToAll sends inputs[q] to rank q, which receives it into outputs[rank].
func (c *Comm) AllToAll(ctx context.Context, outputs, inputs []*Tensor, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.allToAll(&r.op, outputs, inputs), opts)
}

// AllToAllAsync is the async form of AllToAll.
func (c *Comm) AllToAllAsync(outputs, inputs []*Tensor, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allToAll(&r.op, outputs, inputs), opts)
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
	r := c.record()
	return c.runRecord(ctx, r, c.allToAllSingle(&r.op, output, input), opts)
}

// AllToAllSingleAsync is the async form of AllToAllSingle.
func (c *Comm) AllToAllSingleAsync(output, input *Tensor, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allToAllSingle(&r.op, output, input), opts)
}

func (c *Comm) allToAllSingle(s *roomOp, output, input *Tensor) error {
	s.Op = Op{Name: OpAllToAllSingle, Kind: algorithms.AllToAll, Root: -1}
	if err := c.checkTensor("input", input); err != nil {
		return err
	}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	s.DType = input.DType()
	if err := checkSameDType("output", output, s.DType); err != nil {
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
	r := c.record()
	return c.runRecord(ctx, r, c.allToAllV(&r.op, output, input, outSplits, inSplits), opts)
}

// AllToAllVAsync is the async form of AllToAllV.
func (c *Comm) AllToAllVAsync(output, input *Tensor, outSplits, inSplits []int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.allToAllV(&r.op, output, input, outSplits, inSplits), opts)
}

func (c *Comm) allToAllV(s *roomOp, output, input *Tensor, outSplits, inSplits []int) error {
	s.Op = Op{Name: OpAllToAllV, Kind: algorithms.AllToAll, Root: -1}
	if err := c.checkTensor("input", input); err != nil {
		return err
	}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	s.DType = input.DType()
	if err := checkSameDType("output", output, s.DType); err != nil {
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
	r := c.record()
	return c.runRecord(ctx, r, c.gather(&r.op, outputs, input, root), opts)
}

// GatherAsync is the async form of Gather.
func (c *Comm) GatherAsync(outputs []*Tensor, input *Tensor, root int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.gather(&r.op, outputs, input, root), opts)
}

func (c *Comm) gather(s *roomOp, outputs []*Tensor, input *Tensor, root int) error {
	if err := c.gatherFrom(s, OpGather, input, root); err != nil || c.cfg.Rank != root {
		return err
	}
	if err := c.checkTensors("outputs", outputs, c.cfg.Size, s.DType); err != nil {
		return err
	}
	for q, t := range outputs {
		if t.Numel() != input.Numel() {
			return commerr.Invalid("outputs[%d] has %d elements, input %d", q, t.Numel(), input.Numel())
		}
	}
	s.Outputs = outputs
	return nil
}

// GatherSingle collects every rank's input into consecutive blocks of
// root's output, which holds Size() times input's elements; output is
// read on root only.
func (c *Comm) GatherSingle(ctx context.Context, output, input *Tensor, root int, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.gatherSingle(&r.op, output, input, root), opts)
}

// GatherSingleAsync is the async form of GatherSingle.
func (c *Comm) GatherSingleAsync(output, input *Tensor, root int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.gatherSingle(&r.op, output, input, root), opts)
}

// gatherFrom lays out what every rank of a gather gives: its input.
func (c *Comm) gatherFrom(s *roomOp, name OpName, input *Tensor, root int) error {
	s.Op = Op{Name: name, Kind: algorithms.Gather, Root: root}
	if err := c.checkRank("root", root); err != nil {
		return err
	}
	if err := c.checkTensor("input", input); err != nil {
		return err
	}
	s.DType = input.DType()
	s.inputs(input)
	s.blocks.counts = repeatInto(s.blocks.counts, input.Numel(), c.cfg.Size)
	s.Counts = s.blocks.counts
	return nil
}

// gatherSingle is gather into the blocks of root's output, as torchcomms'
// default gather_single.
func (c *Comm) gatherSingle(s *roomOp, output, input *Tensor, root int) error {
	if err := c.gatherFrom(s, OpGatherSingle, input, root); err != nil || c.cfg.Rank != root {
		return err
	}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	if err := checkSameDType("output", output, s.DType); err != nil {
		return err
	}
	if output.Numel() != c.cfg.Size*input.Numel() {
		return commerr.Invalid("output has %d elements, want %d ranks × %d", output.Numel(), c.cfg.Size, input.Numel())
	}
	views, ptrs := s.blocks.room(c.cfg.Size)
	if err := cut(views, ptrs, output, s.Counts); err != nil {
		return err
	}
	s.Outputs = ptrs
	return nil
}

// Scatter sends root's inputs[q] to rank q's output. inputs is read on root
// only.
func (c *Comm) Scatter(ctx context.Context, output *Tensor, inputs []*Tensor, root int, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.scatter(&r.op, output, inputs, root), opts)
}

// ScatterAsync is the async form of Scatter.
func (c *Comm) ScatterAsync(output *Tensor, inputs []*Tensor, root int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.scatter(&r.op, output, inputs, root), opts)
}

func (c *Comm) scatter(s *roomOp, output *Tensor, inputs []*Tensor, root int) error {
	s.Op = Op{Name: OpScatter, Kind: algorithms.Scatter, Root: root}
	if err := c.checkRank("root", root); err != nil {
		return err
	}
	if err := c.checkTensor("output", output); err != nil {
		return err
	}
	s.DType = output.DType()
	s.outputs(output)
	s.blocks.counts = repeatInto(s.blocks.counts, output.Numel(), c.cfg.Size)
	s.Counts = s.blocks.counts
	if c.cfg.Rank != root {
		return nil
	}
	if err := c.checkTensors("inputs", inputs, c.cfg.Size, s.DType); err != nil {
		return err
	}
	for q, t := range inputs {
		if t.Numel() != output.Numel() {
			return commerr.Invalid("inputs[%d] has %d elements, output %d", q, t.Numel(), output.Numel())
		}
	}
	s.Inputs = inputs
	return nil
}

// Barrier returns once every rank has entered it.
func (c *Comm) Barrier(ctx context.Context, opts ...CallOption) error {
	r := c.record()
	r.op.Op = barrierOp()
	return c.runRecord(ctx, r, nil, opts)
}

// BarrierAsync is the async form of Barrier.
func (c *Comm) BarrierAsync(opts ...CallOption) *Work {
	r := c.record()
	r.op.Op = barrierOp()
	return c.startRecord(r, nil, opts)
}

func barrierOp() Op {
	return Op{Name: OpBarrier, Kind: algorithms.Barrier, Root: -1, DType: Uint8}
}
