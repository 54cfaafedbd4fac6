package commtest

import (
	"cmp"
	"context"
	"fmt"
	"strconv"

	"github.com/gocomms/gocomms"
)

// call is one case in progress on one rank. Rank r's input block b is
// value(..., r, b, i) for i from 0: each collective below fills the blocks
// it sends that way and checks each block it receives against the rank and
// block it must hold.
type call struct {
	Case
	rank, size int
	// comm, if set, allocates the case's tensors (Comm.Alloc); allocs
	// are those to free, allocErr the first allocation that failed.
	comm     *gocomms.Comm
	allocs   []*gocomms.Tensor
	allocErr error
}

func (x *call) value(r, b, i int) int64 { return value(x.DType, x.Op.Kind(), x.Seed, r, b, i) }

func (x *call) root() int { return int(uint(x.Seed) % uint(x.size)) }

// tensor returns n zeros of the case's dtype. Run validated the dtype and
// bounded the count, so an error is a broken invariant.
func (x *call) tensor(n int) *gocomms.Tensor {
	if x.comm != nil && (n > 0 || !x.comm.Device().IsCPU()) {
		t, err := x.comm.Alloc(x.DType, n)
		if err == nil {
			x.allocs = append(x.allocs, t)
			return t
		}
		x.allocErr = cmp.Or(x.allocErr, err)
	}
	t, err := gocomms.NewTensor(x.DType, n)
	if err != nil {
		panic(fmt.Sprintf("commtest: %v: %v", x.Case, err))
	}
	return t
}

// free lets go of the tensors Alloc gave the case, and reports the first
// allocation that failed, if one did.
func (x *call) free() error {
	err := x.allocErr
	for _, t := range x.allocs {
		err = cmp.Or(err, x.comm.Free(t))
	}
	x.allocs = nil
	return err
}

// fill returns rank r's block b of n elements.
func (x *call) fill(r, b, n int) *gocomms.Tensor { return x.packed(r, []int{n}, b, 0) }

// packed returns rank r's blocks first, first+1, ... of ns[k] elements
// each, back to back, followed by spare zeros.
func (x *call) packed(r int, ns []int, first, spare int) *gocomms.Tensor {
	h, err := gocomms.NewTensor(x.DType, sum(ns)+spare)
	if err != nil {
		panic(fmt.Sprintf("commtest: %v: %v", x.Case, err))
	}
	off := 0
	for k, n := range ns {
		for i := range n {
			h.SetInt64(off+i, x.value(r, first+k, i))
		}
		off += n
	}
	t := x.tensor(h.Numel())
	if t.Device().IsCPU() {
		copy(t.Bytes(), h.Bytes())
		return t
	}
	x.allocErr = cmp.Or(x.allocErr, upload(t, h.Bytes()))
	return t
}

// onHost returns t, or a copy on the host of a tensor on a GPU.
func (x *call) onHost(t *gocomms.Tensor) *gocomms.Tensor {
	if t.Device().IsCPU() {
		return t
	}
	h, err := gocomms.NewTensor(x.DType, t.Numel())
	if err != nil {
		panic(fmt.Sprintf("commtest: %v: %v", x.Case, err))
	}
	x.allocErr = cmp.Or(x.allocErr, download(h.Bytes(), t))
	return h
}

func (x *call) wrong(where string, i int, got, want string) error {
	return &Mismatch{Rank: x.rank, Case: x.Case, Where: where, Index: i, Got: got, Want: want}
}

// wrongInt reports integer or bool values, unsigned ones as unsigned.
func (x *call) wrongInt(where string, i int, got, want int64) error {
	if x.DType.IsSigned() {
		return x.wrong(where, i, strconv.FormatInt(got, 10), strconv.FormatInt(want, 10))
	}
	return x.wrong(where, i, strconv.FormatUint(uint64(got), 10), strconv.FormatUint(uint64(want), 10))
}

func (x *call) wrongFloat(where string, i int, got, want float64) error {
	return x.wrong(where, i, strconv.FormatFloat(got, 'g', -1, 64), strconv.FormatFloat(want, 'g', -1, 64))
}

func (x *call) failed(err error) error {
	return fmt.Errorf("rank %d: %v: %w", x.rank, x.Case, err)
}

// reduced checks that got holds every rank's block b reduced with the op.
func (x *call) reduced(where string, got *gocomms.Tensor, b int) error {
	got = x.onHost(got)
	vals := make([]int64, x.size)
	for i := range got.Numel() {
		for q := range vals {
			vals[q] = x.value(q, b, i)
		}
		iv, fv := combine(x.DType, x.Op, vals)
		if x.DType.IsFloat() {
			if g := got.Float64At(i); !closeEnough(x.DType, x.size, g, fv) {
				return x.wrongFloat(where, i, g, fv)
			}
			continue
		}
		if g, w := got.Int64At(i), wrap(x.DType, iv); g != w {
			return x.wrongInt(where, i, g, w)
		}
	}
	return nil
}

// wrap truncates v to dt's width, as storing it in a dt tensor does.
func wrap(dt gocomms.DType, v int64) int64 {
	shift := 64 - 8*dt.Size()
	if dt.IsSigned() {
		return v << shift >> shift
	}
	return int64(uint64(v) << shift >> shift)
}

// copied checks that got holds rank r's block b.
func (x *call) copied(where string, got *gocomms.Tensor, r, b int) error {
	return x.copiedAt(where, got, 0, got.Numel(), r, b)
}

// copiedAt checks that the n elements of got from off hold rank r's block
// b. Every dtype holds the generated values exactly.
func (x *call) copiedAt(where string, got *gocomms.Tensor, off, n, r, b int) error {
	got = x.onHost(got)
	for i := range n {
		w := x.value(r, b, i)
		if x.DType.IsFloat() {
			if g := got.Float64At(off + i); g != float64(w) {
				return x.wrongFloat(where, i, g, float64(w))
			}
		} else if g := got.Int64At(off + i); g != w {
			return x.wrongInt(where, i, g, w)
		}
	}
	return nil
}

func allReduce(ctx context.Context, c *gocomms.Comm, x *call) error {
	t := x.fill(x.rank, 0, x.Count)
	if err := c.AllReduce(ctx, t, x.Op); err != nil {
		return x.failed(err)
	}
	return x.reduced("output", t, 0)
}

func reduceToRoot(ctx context.Context, c *gocomms.Comm, x *call) error {
	root := x.root()
	t := x.fill(x.rank, 0, x.Count)
	if err := c.Reduce(ctx, t, root, x.Op); err != nil {
		return x.failed(err)
	}
	if x.rank != root {
		return x.copied(fmt.Sprintf("input off root %d, which must not change", root), t, x.rank, 0)
	}
	return x.reduced(fmt.Sprintf("output at root %d", root), t, 0)
}

// uniform returns n block sizes of count elements each.
func uniform(n, count int) []int {
	ns := make([]int, n)
	for i := range ns {
		ns[i] = count
	}
	return ns
}

// vCount is rank q's element count in the V forms.
func vCount(count, q int) int { return count + q%3 }

// perRank returns one tensor per rank, tensor q made by mk(q).
func (x *call) perRank(mk func(q int) *gocomms.Tensor) []*gocomms.Tensor {
	ts := make([]*gocomms.Tensor, x.size)
	for q := range ts {
		ts[q] = mk(q)
	}
	return ts
}

func reduceScatter(ctx context.Context, c *gocomms.Comm, x *call) error {
	inputs := x.perRank(func(b int) *gocomms.Tensor { return x.fill(x.rank, b, x.Count) })
	out := x.tensor(x.Count)
	if err := c.ReduceScatter(ctx, out, inputs, x.Op); err != nil {
		return x.failed(err)
	}
	return x.reduced("output", out, x.rank)
}

func reduceScatterSingle(ctx context.Context, c *gocomms.Comm, x *call) error {
	out := x.tensor(x.Count)
	if err := c.ReduceScatterSingle(ctx, out, x.packed(x.rank, uniform(x.size, x.Count), 0, 0), x.Op); err != nil {
		return x.failed(err)
	}
	return x.reduced("output", out, x.rank)
}

func reduceScatterV(ctx context.Context, c *gocomms.Comm, x *call) error {
	inputs := x.perRank(func(b int) *gocomms.Tensor { return x.fill(x.rank, b, vCount(x.Count, b)) })
	out := x.tensor(vCount(x.Count, x.rank))
	if err := c.ReduceScatterV(ctx, out, inputs, x.Op); err != nil {
		return x.failed(err)
	}
	return x.reduced("output", out, x.rank)
}

func broadcast(ctx context.Context, c *gocomms.Comm, x *call) error {
	root := x.root()
	t := x.fill(x.rank, 0, x.Count)
	if err := c.Broadcast(ctx, t, root); err != nil {
		return x.failed(err)
	}
	return x.copied(fmt.Sprintf("output from root %d", root), t, root, 0)
}

// gathered checks that outs[q] holds rank q's block b.
func (x *call) gathered(outs []*gocomms.Tensor, b int) error {
	for q, o := range outs {
		if err := x.copied(fmt.Sprintf("outputs[%d]", q), o, q, b); err != nil {
			return err
		}
	}
	return nil
}

// gatheredSingle checks that out holds each rank's block b of Count
// elements, in rank order.
func (x *call) gatheredSingle(out *gocomms.Tensor, b int) error {
	for q := range x.size {
		if err := x.copiedAt(fmt.Sprintf("block %d", q), out, q*x.Count, x.Count, q, b); err != nil {
			return err
		}
	}
	return nil
}

func allGather(ctx context.Context, c *gocomms.Comm, x *call) error {
	outs := x.perRank(func(int) *gocomms.Tensor { return x.tensor(x.Count) })
	if err := c.AllGather(ctx, outs, x.fill(x.rank, 0, x.Count)); err != nil {
		return x.failed(err)
	}
	return x.gathered(outs, 0)
}

func allGatherSingle(ctx context.Context, c *gocomms.Comm, x *call) error {
	out := x.tensor(x.Count * x.size)
	if err := c.AllGatherSingle(ctx, out, x.fill(x.rank, 0, x.Count)); err != nil {
		return x.failed(err)
	}
	return x.gatheredSingle(out, 0)
}

func allGatherV(ctx context.Context, c *gocomms.Comm, x *call) error {
	outs := x.perRank(func(q int) *gocomms.Tensor { return x.tensor(vCount(x.Count, q)) })
	if err := c.AllGatherV(ctx, outs, x.fill(x.rank, 0, vCount(x.Count, x.rank))); err != nil {
		return x.failed(err)
	}
	return x.gathered(outs, 0)
}

func allToAll(ctx context.Context, c *gocomms.Comm, x *call) error {
	ins := x.perRank(func(q int) *gocomms.Tensor { return x.fill(x.rank, q, x.Count) })
	outs := x.perRank(func(int) *gocomms.Tensor { return x.tensor(x.Count) })
	if err := c.AllToAll(ctx, outs, ins); err != nil {
		return x.failed(err)
	}
	return x.gathered(outs, x.rank)
}

func allToAllSingle(ctx context.Context, c *gocomms.Comm, x *call) error {
	out := x.tensor(x.Count * x.size)
	if err := c.AllToAllSingle(ctx, out, x.packed(x.rank, uniform(x.size, x.Count), 0, 0)); err != nil {
		return x.failed(err)
	}
	return x.gatheredSingle(out, x.rank)
}

// split is how many elements rank from sends to rank to in all_to_all_v.
func split(count, from, to int) int { return (count + from + 2*to) % 3 }

func allToAllV(ctx context.Context, c *gocomms.Comm, x *call) error {
	in, out := make([]int, x.size), make([]int, x.size)
	for q := range x.size {
		in[q], out[q] = split(x.Count, x.rank, q), split(x.Count, q, x.rank)
	}
	output := x.tensor(sum(out) + 2) // spare rows: the splits need not cover the tensors
	if err := c.AllToAllV(ctx, output, x.packed(x.rank, in, 0, 1), out, in); err != nil {
		return x.failed(err)
	}
	off := 0
	for q, n := range out {
		if err := x.copiedAt(fmt.Sprintf("block from rank %d", q), output, off, n, q, x.rank); err != nil {
			return err
		}
		off += n
	}
	return nil
}

func sum(xs []int) int {
	t := 0
	for _, v := range xs {
		t += v
	}
	return t
}

func gather(ctx context.Context, c *gocomms.Comm, x *call) error {
	root := x.root()
	var outs []*gocomms.Tensor
	if x.rank == root {
		outs = x.perRank(func(int) *gocomms.Tensor { return x.tensor(x.Count) })
	}
	if err := c.Gather(ctx, outs, x.fill(x.rank, 0, x.Count), root); err != nil {
		return x.failed(err)
	}
	return x.gathered(outs, 0)
}

func gatherSingle(ctx context.Context, c *gocomms.Comm, x *call) error {
	root := x.root()
	var out *gocomms.Tensor
	if x.rank == root {
		out = x.tensor(x.Count * x.size)
	}
	if err := c.GatherSingle(ctx, out, x.fill(x.rank, 0, x.Count), root); err != nil {
		return x.failed(err)
	}
	if x.rank != root {
		return nil
	}
	return x.gatheredSingle(out, 0)
}

func scatter(ctx context.Context, c *gocomms.Comm, x *call) error {
	root := x.root()
	var ins []*gocomms.Tensor
	if x.rank == root {
		ins = x.perRank(func(q int) *gocomms.Tensor { return x.fill(root, q, x.Count) })
	}
	out := x.tensor(x.Count)
	if err := c.Scatter(ctx, out, ins, root); err != nil {
		return x.failed(err)
	}
	return x.copied(fmt.Sprintf("output from root %d", root), out, root, x.rank)
}

func sendRecv(ctx context.Context, c *gocomms.Comm, x *call) error {
	if x.size == 1 {
		return nil
	}
	next, prev := (x.rank+1)%x.size, (x.rank+x.size-1)%x.size
	sent := c.SendAsync(x.fill(x.rank, 0, x.Count), next)
	got := x.tensor(x.Count)
	err := c.Recv(ctx, got, prev)
	if werr := sent.Wait(ctx); err == nil {
		err = werr
	}
	if err != nil {
		return x.failed(err)
	}
	return x.copied(fmt.Sprintf("received from rank %d", prev), got, prev, 0)
}

// batch sends rank q block q*2+tag for each tag.
func batch(ctx context.Context, c *gocomms.Comm, x *call) error {
	if x.size == 1 {
		return nil
	}
	type recv struct {
		from, tag int
		t         *gocomms.Tensor
	}
	var recvs []recv
	b := c.NewBatch()
	for q := range x.size {
		if q == x.rank {
			continue
		}
		for tag := range 2 {
			r := recv{q, tag, x.tensor(x.Count)}
			b.Send(x.fill(x.rank, q*2+tag, x.Count), q, gocomms.Tag(tag)).Recv(r.t, q, gocomms.Tag(tag))
			recvs = append(recvs, r)
		}
	}
	if err := b.Issue(ctx); err != nil {
		return x.failed(err)
	}
	for _, r := range recvs {
		if err := x.copied(fmt.Sprintf("received from rank %d tag %d", r.from, r.tag), r.t, r.from, x.rank*2+r.tag); err != nil {
			return err
		}
	}
	return nil
}
