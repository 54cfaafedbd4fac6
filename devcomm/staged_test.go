package devcomm

import (
	"slices"
	"testing"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/tensor"
	"pgregory.net/rapid"
)

// TestCutCoversEveryBlock: a staged collective cut into pieces (cut)
// covers each of its tensors' blocks exactly once, in order, piece k
// holding elements [k·per, (k+1)·per) of every block; each piece is a
// collective of its own whose blocks are the ones its counts give
// (algorithms.Spec.Blocks), on every rank, and every rank cuts into as
// many pieces. All-to-all with counts of its own, and what fits one
// piece, are not cut.
func TestCutCoversEveryBlock(t *testing.T) {
	kinds := []algorithms.Kind{algorithms.AllReduce, algorithms.Reduce, algorithms.Broadcast, algorithms.AllGather,
		algorithms.ReduceScatter, algorithms.AllToAll, algorithms.Gather, algorithms.Scatter}
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom(kinds).Draw(t, "kind")
		size := rapid.IntRange(1, 5).Draw(t, "ranks")
		root := rapid.IntRange(0, size-1).Draw(t, "root")
		chunk := rapid.IntRange(0, 64).Draw(t, "chunk") // bytes; int64 elements
		counts := make([]int, size)
		switch kind {
		case algorithms.AllReduce, algorithms.Reduce, algorithms.Broadcast:
			counts = []int{rapid.IntRange(0, 40).Draw(t, "count")}
		case algorithms.AllToAll:
			c := rapid.IntRange(0, 40).Draw(t, "count")
			for i := range counts {
				counts[i] = c
			}
		default:
			for i := range counts {
				counts[i] = rapid.IntRange(0, 40).Draw(t, "counts")
			}
		}
		var pieces []int
		for rank := range size {
			spec := algorithms.Spec{Kind: kind, Rank: rank, Size: size, Root: root, Counts: counts}
			if kind == algorithms.AllToAll {
				spec.SendCounts, spec.RecvCounts = counts, counts
			}
			op := &backend.Op{Kind: kind, DType: tensor.Int64, Root: root, Counts: counts,
				Inputs: blocks(spec.Blocks(algorithms.Input)), Outputs: blocks(spec.Blocks(algorithms.Output))}
			ops := cut(op, chunk)
			pieces = append(pieces, len(ops))
			per := max(chunk/8, 1)
			if ops == nil {
				if chunk > 0 && longest(counts) > per {
					t.Fatalf("rank %d: %v of %v not cut into pieces of %d", rank, kind, counts, per)
				}
				continue
			}
			for k, p := range ops {
				ps := spec
				ps.Counts = p.Counts
				if kind == algorithms.AllToAll {
					ps.SendCounts, ps.RecvCounts = p.Counts, p.Counts
				}
				if want := spec.Blocks(algorithms.Input); !slices.Equal(numels(p.Inputs), ps.Blocks(algorithms.Input)) || len(want) != len(p.Inputs) {
					t.Fatalf("rank %d piece %d: input blocks %v, its counts give %v", rank, k, numels(p.Inputs), ps.Blocks(algorithms.Input))
				}
				if !slices.Equal(numels(p.Outputs), ps.Blocks(algorithms.Output)) {
					t.Fatalf("rank %d piece %d: output blocks %v, its counts give %v", rank, k, numels(p.Outputs), ps.Blocks(algorithms.Output))
				}
			}
			for _, side := range []struct {
				whole  []*tensor.Tensor
				pieces func(*backend.Op) []*tensor.Tensor
			}{{op.Inputs, func(p *backend.Op) []*tensor.Tensor { return p.Inputs }},
				{op.Outputs, func(p *backend.Op) []*tensor.Tensor { return p.Outputs }}} {
				for b, whole := range side.whole {
					var got []int64
					for k, p := range ops {
						v := side.pieces(p)[b]
						if v.Numel() > 0 && int(v.Int64At(0)) != k*per {
							t.Fatalf("rank %d: piece %d of block %d starts at element %d, want %d", rank, k, b, v.Int64At(0), k*per)
						}
						for i := range v.Numel() {
							got = append(got, v.Int64At(i))
						}
					}
					if len(got) != whole.Numel() {
						t.Fatalf("rank %d: the pieces of block %d hold %d elements of %d", rank, b, len(got), whole.Numel())
					}
					for i, v := range got {
						if v != int64(i) {
							t.Fatalf("rank %d: the pieces of block %d hold %v", rank, b, got)
						}
					}
				}
			}
		}
		if slices.Min(pieces) != slices.Max(pieces) {
			t.Fatalf("the ranks cut %v of %v into %v pieces", kind, counts, pieces)
		}
	})
}

// TestCutLeavesOwnCountsWhole: all-to-all with counts of each rank's own,
// point-to-point messages and custom schedules stay whole.
func TestCutLeavesOwnCountsWhole(t *testing.T) {
	x := blocks([]int{100, 100})
	for _, op := range []*backend.Op{
		{Kind: algorithms.AllToAll, DType: tensor.Int64, Send: []int{100, 100}, Recv: []int{100, 100}, Inputs: x, Outputs: x},
		{DType: tensor.Int64, P2P: []backend.P2P{{Peer: 1, Send: true, Tensor: x[0]}}},
		{Kind: algorithms.Barrier},
	} {
		if ops := cut(op, 64); ops != nil {
			t.Errorf("%+v cut into %d pieces", op, len(ops))
		}
	}
}

// blocks returns int64 tensors of counts, element i of each holding i;
// nil for none.
func blocks(counts []int) []*tensor.Tensor {
	if counts == nil {
		return nil
	}
	ts := make([]*tensor.Tensor, len(counts))
	for b, n := range counts {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i)
		}
		ts[b] = tensor.FromSlice(v)
	}
	return ts
}

func numels(ts []*tensor.Tensor) []int {
	if ts == nil {
		return nil
	}
	n := make([]int, len(ts))
	for i, t := range ts {
		n[i] = t.Numel()
	}
	return n
}
