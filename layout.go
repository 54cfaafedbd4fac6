package gocomms

import (
	"context"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
)

// runLaid runs the collective that lay checks and lays out in a record,
// and waits for it.
func (c *Comm) runLaid(ctx context.Context, opts []CallOption, lay func(*roomOp) error) error {
	r := c.record()
	return c.runRecord(ctx, r, lay(&r.op), opts)
}

// startLaid starts the collective that lay checks and lays out in a
// record.
func (c *Comm) startLaid(opts []CallOption, lay func(*roomOp) error) *Work {
	r := c.record()
	return c.startRecord(r, lay(&r.op), opts)
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

// A collective's arguments stand in a few roles, and its checks follow
// from them, in this order: the root, for a rooted collective; mine, the
// tensor this rank gives or takes whole, whose dtype is the collective's;
// the other side's blocks, one per rank, for a collective that moves
// blocks (read on the root only, for a rooted one); last, the reduce op,
// for a reduction.

// rooted says whether a collective of kind k has a root.
func rooted(k algorithms.Kind) bool {
	return k == algorithms.Reduce || k == algorithms.Broadcast || k == algorithms.Gather || k == algorithms.Scatter
}

// reduces says whether a collective of kind k reduces.
func reduces(k algorithms.Kind) bool {
	return k == algorithms.AllReduce || k == algorithms.Reduce || k == algorithms.ReduceScatter
}

// begin sets s's Op to op and checks its root, if it has one, and mine,
// named what, whose dtype becomes the collective's.
func (c *Comm) begin(s *roomOp, op Op, what string, mine *Tensor) error {
	s.Op = op
	if rooted(op.Kind) {
		if err := c.checkRank("root", op.Root); err != nil {
			return err
		}
	}
	if err := c.checkTensor(what, mine); err != nil {
		return err
	}
	s.DType = mine.DType()
	return nil
}

// finish checks a reduction's op, once its tensors have passed.
func finish(s *roomOp) error {
	if !reduces(s.Kind) {
		return nil
	}
	return checkReduce(s.Reduce, s.DType)
}

// sides says where a collective's one tensor stands.
type sides uint8

const (
	asInput sides = 1 << iota
	asOutput
)

// whole lays out op, a collective of one tensor a rank, t, which stands
// on the sides on says.
func (c *Comm) whole(s *roomOp, op Op, t *Tensor, on sides) error {
	if err := c.begin(s, op, "tensor", t); err != nil {
		return err
	}
	s.counts(t.Numel())
	if on&asInput != 0 {
		s.inputs(t)
	}
	if on&asOutput != 0 {
		s.outputs(t)
	}
	return finish(s)
}

// blocked is a collective that moves one block per rank between mine and
// the other side: the tensors of list, or the consecutive blocks of
// whole. A gather's mine is its input and the blocks its outputs; a
// scatter's (reduce_scatter's too) the reverse.
type blocked struct {
	op      Op
	mine    *Tensor
	gathers bool
	list    []*Tensor
	whole   *Tensor
	single  bool // the blocks are whole's, Size() of mine's count
	varies  bool // only this rank's block must have mine's count
}

// names returns what errors call mine, the list and the whole tensor.
func (b *blocked) names() (mine, list, whole string) {
	if b.gathers {
		return "input", "outputs", "output"
	}
	return "output", "inputs", "input"
}

// blocks checks and lays out the collective b in s.
func (c *Comm) blocks(s *roomOp, b blocked) error {
	mine, _, _ := b.names()
	if err := c.begin(s, b.op, mine, b.mine); err != nil {
		return err
	}
	s.blocks.counts = repeatInto(s.blocks.counts, b.mine.Numel(), c.cfg.Size)
	s.Counts = s.blocks.counts
	if b.gathers {
		s.inputs(b.mine)
	} else {
		s.outputs(b.mine)
	}
	if rooted(s.Kind) && c.cfg.Rank != s.Root {
		return finish(s)
	}
	var blocks []*Tensor
	var err error
	if b.single {
		blocks, err = c.wholeBlocks(s, &b)
	} else {
		blocks, err = c.listBlocks(s, &b)
	}
	if err != nil {
		return err
	}
	if b.gathers {
		s.Outputs = blocks
	} else {
		s.Inputs = blocks
	}
	return finish(s)
}

// listBlocks checks b's list against mine, and returns it; the counts
// become the list's where they vary.
func (c *Comm) listBlocks(s *roomOp, b *blocked) ([]*Tensor, error) {
	mine, list, _ := b.names()
	if err := c.checkTensors(list, b.list, c.cfg.Size, s.DType); err != nil {
		return nil, err
	}
	n := b.mine.Numel()
	for q, t := range b.list {
		if (!b.varies || q == c.cfg.Rank) && t.Numel() != n {
			return nil, commerr.Invalid("%s[%d] has %d elements, %s %d", list, q, t.Numel(), mine, n)
		}
	}
	if b.varies {
		s.blocks.counts = numelsInto(s.blocks.counts, b.list)
		s.Counts = s.blocks.counts
	}
	return b.list, nil
}

// wholeBlocks checks b's whole tensor against mine, and returns views of
// its blocks.
func (c *Comm) wholeBlocks(s *roomOp, b *blocked) ([]*Tensor, error) {
	mine, _, whole := b.names()
	if err := c.checkLike(whole, b.whole, mine, s.DType); err != nil {
		return nil, err
	}
	if n := b.mine.Numel(); b.whole.Numel() != c.cfg.Size*n {
		return nil, commerr.Invalid("%s has %d elements, want %d ranks × %d", whole, b.whole.Numel(), c.cfg.Size, n)
	}
	views, ptrs := s.blocks.room(c.cfg.Size)
	if err := cut(views, ptrs, b.whole, s.Counts); err != nil {
		return nil, err
	}
	return ptrs, nil
}
