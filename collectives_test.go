package gocomms_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// worldSizes are the sweep's communicator sizes: 1 to 9 and 16, fewer under
// -short (which the race run uses).
func worldSizes() []int {
	if testing.Short() {
		return []int{1, 2, 3, 5, 8}
	}
	return []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16}
}

// sweepCounts are 0, 1, fewer than the ranks, and odd.
func sweepCounts(n int) []int {
	cs := []int{0, 1, n - 1, 2*n + 1}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// TestCollectivesSweep checks every collective × dtype × valid op × count
// against the reference, at every world size.
func TestCollectivesSweep(t *testing.T) {
	for _, n := range worldSizes() {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
				s := sweeper{c: c, n: n, r: c.Rank()}
				for _, dt := range tensor.DTypes() {
					for _, count := range sweepCounts(n) {
						if err := s.all(ctx, dt, count); err != nil {
							return fmt.Errorf("%v count %d: %w", dt, count, err)
						}
					}
				}
				return c.Barrier(ctx)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

type sweeper struct {
	c    *gocomms.Comm
	n, r int
	seed int
}

func (s *sweeper) all(ctx context.Context, dt gocomms.DType, count int) error {
	for _, op := range validOps(dt) {
		for _, f := range []func(context.Context, gocomms.DType, gocomms.ReduceOp, int) error{
			s.allReduce, s.reduce, s.reduceScatter, s.reduceScatterSingle, s.reduceScatterV,
		} {
			s.seed++
			if err := f(ctx, dt, op, count); err != nil {
				return fmt.Errorf("%v: %w", op, err)
			}
		}
	}
	for _, f := range []func(context.Context, gocomms.DType, int) error{
		s.broadcast, s.allGather, s.allGatherSingle, s.allGatherV, s.allToAll, s.allToAllSingle,
		s.allToAllV, s.gather, s.scatter, s.sendRecv, s.batch,
	} {
		s.seed++
		if err := f(ctx, dt, count); err != nil {
			return err
		}
	}
	return nil
}

// ranksAt returns every rank's element i of block b.
func (s *sweeper) ranksAt(dt gocomms.DType, k reduce.Kind, b int) func(i int) []int64 {
	return func(i int) []int64 {
		vs := make([]int64, s.n)
		for q := range vs {
			vs[q] = value(dt, k, s.seed, q, b, i)
		}
		return vs
	}
}

func (s *sweeper) allReduce(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	t := fill(dt, op.Kind(), s.seed, s.r, 0, count)
	if err := s.c.AllReduce(ctx, t, op); err != nil {
		return err
	}
	if err := checkReduced(t, op, s.n, s.ranksAt(dt, op.Kind(), 0)); err != nil {
		return fmt.Errorf("all_reduce: %w", err)
	}
	return nil
}

func (s *sweeper) reduce(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	root := s.seed % s.n
	t := fill(dt, op.Kind(), s.seed, s.r, 0, count)
	if err := s.c.Reduce(ctx, t, root, op); err != nil {
		return err
	}
	if s.r != root {
		if err := checkCopied(t, op.Kind(), s.seed, s.r, 0); err != nil {
			return fmt.Errorf("reduce changed non-root input: %w", err)
		}
		return nil
	}
	if err := checkReduced(t, op, s.n, s.ranksAt(dt, op.Kind(), 0)); err != nil {
		return fmt.Errorf("reduce to root %d: %w", root, err)
	}
	return nil
}

func (s *sweeper) reduceScatter(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	inputs := make([]*gocomms.Tensor, s.n)
	for b := range inputs {
		inputs[b] = fill(dt, op.Kind(), s.seed, s.r, b, count)
	}
	out := mustTensor(dt, count)
	if err := s.c.ReduceScatter(ctx, out, inputs, op); err != nil {
		return err
	}
	if err := checkReduced(out, op, s.n, s.ranksAt(dt, op.Kind(), s.r)); err != nil {
		return fmt.Errorf("reduce_scatter: %w", err)
	}
	return nil
}

func (s *sweeper) reduceScatterSingle(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	in := mustTensor(dt, count*s.n)
	for b := range s.n {
		for i := range count {
			in.SetInt64(b*count+i, value(dt, op.Kind(), s.seed, s.r, b, i))
		}
	}
	out := mustTensor(dt, count)
	if err := s.c.ReduceScatterSingle(ctx, out, in, op); err != nil {
		return err
	}
	if err := checkReduced(out, op, s.n, s.ranksAt(dt, op.Kind(), s.r)); err != nil {
		return fmt.Errorf("reduce_scatter_single: %w", err)
	}
	return nil
}

// vCount is rank q's element count in the V forms.
func vCount(count, q int) int { return count + q%3 }

func (s *sweeper) reduceScatterV(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	inputs := make([]*gocomms.Tensor, s.n)
	for b := range inputs {
		inputs[b] = fill(dt, op.Kind(), s.seed, s.r, b, vCount(count, b))
	}
	out := mustTensor(dt, vCount(count, s.r))
	if err := s.c.ReduceScatterV(ctx, out, inputs, op); err != nil {
		return err
	}
	if err := checkReduced(out, op, s.n, s.ranksAt(dt, op.Kind(), s.r)); err != nil {
		return fmt.Errorf("reduce_scatter_v: %w", err)
	}
	return nil
}

func (s *sweeper) broadcast(ctx context.Context, dt gocomms.DType, count int) error {
	root := s.seed % s.n
	t := fill(dt, reduce.Sum, s.seed, s.r, 0, count)
	if err := s.c.Broadcast(ctx, t, root); err != nil {
		return err
	}
	if err := checkCopied(t, reduce.Sum, s.seed, root, 0); err != nil {
		return fmt.Errorf("broadcast from %d: %w", root, err)
	}
	return nil
}

func (s *sweeper) allGather(ctx context.Context, dt gocomms.DType, count int) error {
	outs := make([]*gocomms.Tensor, s.n)
	for q := range outs {
		outs[q] = mustTensor(dt, count)
	}
	if err := s.c.AllGather(ctx, outs, fill(dt, reduce.Sum, s.seed, s.r, 0, count)); err != nil {
		return err
	}
	for q, o := range outs {
		if err := checkCopied(o, reduce.Sum, s.seed, q, 0); err != nil {
			return fmt.Errorf("all_gather block %d: %w", q, err)
		}
	}
	return nil
}

func (s *sweeper) allGatherSingle(ctx context.Context, dt gocomms.DType, count int) error {
	out := mustTensor(dt, count*s.n)
	if err := s.c.AllGatherSingle(ctx, out, fill(dt, reduce.Sum, s.seed, s.r, 0, count)); err != nil {
		return err
	}
	for q := range s.n {
		b, _ := out.Narrow(q*count, count)
		if err := checkCopied(b, reduce.Sum, s.seed, q, 0); err != nil {
			return fmt.Errorf("all_gather_single block %d: %w", q, err)
		}
	}
	return nil
}

func (s *sweeper) allGatherV(ctx context.Context, dt gocomms.DType, count int) error {
	outs := make([]*gocomms.Tensor, s.n)
	for q := range outs {
		outs[q] = mustTensor(dt, vCount(count, q))
	}
	if err := s.c.AllGatherV(ctx, outs, fill(dt, reduce.Sum, s.seed, s.r, 0, vCount(count, s.r))); err != nil {
		return err
	}
	for q, o := range outs {
		if err := checkCopied(o, reduce.Sum, s.seed, q, 0); err != nil {
			return fmt.Errorf("all_gather_v block %d: %w", q, err)
		}
	}
	return nil
}

func (s *sweeper) allToAll(ctx context.Context, dt gocomms.DType, count int) error {
	ins, outs := make([]*gocomms.Tensor, s.n), make([]*gocomms.Tensor, s.n)
	for q := range ins {
		ins[q] = fill(dt, reduce.Sum, s.seed, s.r, q, count)
		outs[q] = mustTensor(dt, count)
	}
	if err := s.c.AllToAll(ctx, outs, ins); err != nil {
		return err
	}
	for q, o := range outs {
		if err := checkCopied(o, reduce.Sum, s.seed, q, s.r); err != nil {
			return fmt.Errorf("all_to_all from %d: %w", q, err)
		}
	}
	return nil
}

func (s *sweeper) allToAllSingle(ctx context.Context, dt gocomms.DType, count int) error {
	in, out := mustTensor(dt, count*s.n), mustTensor(dt, count*s.n)
	for q := range s.n {
		for i := range count {
			in.SetInt64(q*count+i, value(dt, reduce.Sum, s.seed, s.r, q, i))
		}
	}
	if err := s.c.AllToAllSingle(ctx, out, in); err != nil {
		return err
	}
	for q := range s.n {
		b, _ := out.Narrow(q*count, count)
		if err := checkCopied(b, reduce.Sum, s.seed, q, s.r); err != nil {
			return fmt.Errorf("all_to_all_single from %d: %w", q, err)
		}
	}
	return nil
}

// split is how many rows rank from sends to rank to in the V test.
func split(count, from, to int) int { return (count + from + 2*to) % 3 }

func (s *sweeper) allToAllV(ctx context.Context, dt gocomms.DType, count int) error {
	in := make([]int, s.n)
	outs := make([]int, s.n)
	for q := range s.n {
		in[q], outs[q] = split(count, s.r, q), split(count, q, s.r)
	}
	input, output := mustTensor(dt, sum(in)+1), mustTensor(dt, sum(outs)+2) // spare rows stay untouched
	off := 0
	for q, n := range in {
		for i := range n {
			input.SetInt64(off+i, value(dt, reduce.Sum, s.seed, s.r, q, i))
		}
		off += n
	}
	if err := s.c.AllToAllV(ctx, output, input, outs, in); err != nil {
		return err
	}
	off = 0
	for q, n := range outs {
		b, _ := output.Narrow(off, n)
		if err := checkCopied(b, reduce.Sum, s.seed, q, s.r); err != nil {
			return fmt.Errorf("all_to_all_v from %d: %w", q, err)
		}
		off += n
	}
	return nil
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

func (s *sweeper) gather(ctx context.Context, dt gocomms.DType, count int) error {
	root := s.seed % s.n
	var outs []*gocomms.Tensor
	if s.r == root {
		outs = make([]*gocomms.Tensor, s.n)
		for q := range outs {
			outs[q] = mustTensor(dt, count)
		}
	}
	if err := s.c.Gather(ctx, outs, fill(dt, reduce.Sum, s.seed, s.r, 0, count), root); err != nil {
		return err
	}
	for q, o := range outs {
		if err := checkCopied(o, reduce.Sum, s.seed, q, 0); err != nil {
			return fmt.Errorf("gather to %d block %d: %w", root, q, err)
		}
	}
	return nil
}

func (s *sweeper) scatter(ctx context.Context, dt gocomms.DType, count int) error {
	root := s.seed % s.n
	var ins []*gocomms.Tensor
	if s.r == root {
		ins = make([]*gocomms.Tensor, s.n)
		for q := range ins {
			ins[q] = fill(dt, reduce.Sum, s.seed, root, q, count)
		}
	}
	out := mustTensor(dt, count)
	if err := s.c.Scatter(ctx, out, ins, root); err != nil {
		return err
	}
	if err := checkCopied(out, reduce.Sum, s.seed, root, s.r); err != nil {
		return fmt.Errorf("scatter from %d: %w", root, err)
	}
	return nil
}

// sendRecv passes a block around the ring with blocking sends and receives.
func (s *sweeper) sendRecv(ctx context.Context, dt gocomms.DType, count int) error {
	if s.n == 1 {
		return nil
	}
	next, prev := (s.r+1)%s.n, (s.r+s.n-1)%s.n
	if err := s.c.Send(ctx, fill(dt, reduce.Sum, s.seed, s.r, 0, count), next); err != nil {
		return err
	}
	got := mustTensor(dt, count)
	if err := s.c.Recv(ctx, got, prev); err != nil {
		return err
	}
	if err := checkCopied(got, reduce.Sum, s.seed, prev, 0); err != nil {
		return fmt.Errorf("recv from %d: %w", prev, err)
	}
	return nil
}

// batch exchanges a block with every other rank in one batch, two messages
// per pair with different tags.
func (s *sweeper) batch(ctx context.Context, dt gocomms.DType, count int) error {
	if s.n == 1 {
		return nil
	}
	b := s.c.NewBatch()
	got := make(map[[2]int]*gocomms.Tensor)
	for q := range s.n {
		if q == s.r {
			continue
		}
		for tag := range 2 {
			b.Send(fill(dt, reduce.Sum, s.seed, s.r, q*2+tag, count), q, gocomms.Tag(tag))
			got[[2]int{q, tag}] = mustTensor(dt, count)
			b.Recv(got[[2]int{q, tag}], q, gocomms.Tag(tag))
		}
	}
	if err := b.Issue(ctx); err != nil {
		return err
	}
	for k, t := range got {
		if err := checkCopied(t, reduce.Sum, s.seed, k[0], s.r*2+k[1]); err != nil {
			return fmt.Errorf("batch recv from %d tag %d: %w", k[0], k[1], err)
		}
	}
	return nil
}

// TestCollectivesLarge runs every collective on about a million elements
// per rank, enough to pipeline many chunks, at a few world sizes.
func TestCollectivesLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large counts run in the full (non-short) test run")
	}
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
				s := sweeper{c: c, n: n, r: c.Rank()}
				for _, dt := range []gocomms.DType{gocomms.Float32, gocomms.Int32} {
					if err := s.all(ctx, dt, 1<<20+1); err != nil {
						return fmt.Errorf("%v: %w", dt, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
