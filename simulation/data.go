package simulation

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// dataset lays out each rank's buffers, fills them with values a plain
// loop can sum exactly, and checks results against that loop. Each rank's
// buffers serve every iteration: an operation's output is checked when it
// ends, and cleared when the next one starts. A phantom run has no buffers
// and nothing to check.
type dataset struct {
	cfg      *Config
	elem     int
	in, out  [][][]byte // by rank: blocks
	expected []float64  // all-reduce's and reduce's sums, the same on every rank
}

func newDataset(cfg *Config) *dataset {
	d := &dataset{
		cfg:  cfg,
		elem: cfg.DType.Size(),
		in:   make([][][]byte, cfg.Ranks),
		out:  make([][][]byte, cfg.Ranks),
	}
	if cfg.Phantom {
		return d
	}
	for r := range cfg.Ranks {
		if cfg.Op == PointToPoint {
			// Block 0 is sent, block 1 received; as a batch's tensors,
			// each serves as both input and output.
			d.in[r] = d.alloc([]int{cfg.Count, cfg.Count})
			d.out[r] = d.in[r]
			for i := range cfg.Count {
				d.put(d.in[r][0], i, value(r, i))
			}
			continue
		}
		s := d.spec(r)
		if s.InPlace {
			// One tensor is the input and the output; a reduce leaves
			// the others' as they were.
			d.in[r] = d.alloc([]int{cfg.Count})
			if d.out[r] = d.in[r]; cfg.Op == algorithms.Reduce && r != cfg.Root {
				d.out[r] = nil
			}
		} else {
			d.in[r] = d.alloc(s.Blocks(algorithms.Input))
			d.out[r] = d.alloc(s.Blocks(algorithms.Output))
		}
		d.fill(r)
	}
	return d
}

// fill writes rank r's inputs.
func (d *dataset) fill(r int) {
	if d.cfg.Op == algorithms.Broadcast && r != d.cfg.Root {
		return // a broadcast's input is the root's
	}
	for b, blk := range d.in[r] {
		for i := range len(blk) / d.elem {
			d.put(blk, i, value(r, b*d.cfg.Count+i))
		}
	}
}

// inPlace reports whether op's one tensor is its input and its output, as
// the communicator's all-reduce, reduce and broadcast take it.
func inPlace(op algorithms.Kind) bool {
	return op == algorithms.AllReduce || op == algorithms.Reduce || op == algorithms.Broadcast
}

// PhantomAbove is the most data, summed over every rank's buffers, that a
// run should carry for real: beyond it, memory and copying, not the
// network model, bound the run, and Phantom times it instead.
const PhantomAbove = 1 << 30

// DataBytes is what every rank's input and output buffers add up to when
// the run carries data for real.
func (c *Config) DataBytes() int64 {
	if c.Op == PointToPoint {
		return 2 * int64(c.Count) * int64(c.DType.Size()) * int64(c.Ranks)
	}
	d := dataset{cfg: c, elem: c.DType.Size()}
	s := d.spec(0)
	var elems int64
	for _, buf := range []algorithms.Buffer{algorithms.Input, algorithms.Output} {
		for _, n := range s.Blocks(buf) {
			elems += int64(n)
		}
	}
	return elems * int64(d.elem) * int64(c.Ranks)
}

// value is element i of rank r's input: small enough that sums over
// 100,000 ranks stay exact in float32.
func value(r, i int) float64 { return float64((r*7+i*13)%101 + 1) }

func (d *dataset) spec(r int) algorithms.Spec {
	cfg := d.cfg
	counts := []int{cfg.Count}
	if cfg.Op == algorithms.AllGather || cfg.Op == algorithms.ReduceScatter {
		counts = make([]int, cfg.Ranks)
		for i := range counts {
			counts[i] = cfg.Count
		}
	}
	if cfg.Op == algorithms.Barrier {
		counts = nil
	}
	return algorithms.Spec{
		Kind: cfg.Op, Rank: r, Size: cfg.Ranks, Root: cfg.Root, Counts: counts,
		ElemSize: d.elem, ChunkBytes: cfg.ChunkBytes, Algorithm: cfg.Algorithm, InPlace: inPlace(cfg.Op),
		LocalSize: cfg.Ranks / cfg.Topology.Nodes, // ranks are numbered node by node
	}
}

func (d *dataset) alloc(blocks []int) [][]byte {
	if blocks == nil {
		return nil
	}
	out := make([][]byte, len(blocks))
	for i, n := range blocks {
		out[i] = make([]byte, n*d.elem)
	}
	return out
}

// prepare readies rank r's buffers for an operation: it zeroes the
// output, and writes again the input that an in-place one overwrote.
func (d *dataset) prepare(r int) {
	switch {
	case d.cfg.Op == algorithms.Broadcast:
		if r != d.cfg.Root {
			clear(d.in[r][0])
		}
		return
	case inPlace(d.cfg.Op):
		d.fill(r)
		return
	case d.cfg.Op == PointToPoint:
		if d.out[r] != nil {
			clear(d.out[r][1])
		}
		return
	}
	for _, b := range d.out[r] {
		clear(b)
	}
}

// want is element i of output block b on rank r, as a plain loop over every
// rank's input computes it.
func (d *dataset) want(r, b, i int) float64 {
	cfg := d.cfg
	sum := func(at int) float64 {
		s := 0.0
		for q := range cfg.Ranks {
			s += value(q, at)
		}
		return s
	}
	switch cfg.Op {
	case algorithms.AllReduce, algorithms.Reduce:
		return sum(i)
	case algorithms.Broadcast:
		return value(cfg.Root, i)
	case algorithms.AllGather:
		return value(b, i)
	case algorithms.ReduceScatter:
		return sum(r*cfg.Count + i)
	case PointToPoint:
		if b == 0 {
			return value(r, i) // what it sent
		}
		return value((r+cfg.Ranks-1)%cfg.Ranks, i)
	}
	return 0
}

// check compares rank r's output with the plain loop's; "" if it matches.
func (d *dataset) check(r int) string {
	cfg := d.cfg
	if cfg.Phantom {
		return ""
	}
	if d.expected == nil && (cfg.Op == algorithms.AllReduce || cfg.Op == algorithms.Reduce) {
		d.expected = make([]float64, cfg.Count)
		for i := range cfg.Count {
			d.expected[i] = d.want(r, 0, i)
		}
	}
	for b, blk := range d.out[r] {
		for i := range len(blk) / d.elem {
			var want float64
			if d.expected != nil {
				want = d.expected[i]
			} else {
				want = d.want(r, b, i)
			}
			if got := d.get(blk, i); got != want {
				return fmt.Sprintf("output block %d element %d is %g, want %g", b, i, got, want)
			}
		}
	}
	return ""
}

func (d *dataset) put(b []byte, i int, v float64) {
	switch d.cfg.DType {
	case tensor.Int64:
		binary.NativeEndian.PutUint64(b[i*8:], uint64(int64(v)))
	case tensor.Float64:
		binary.NativeEndian.PutUint64(b[i*8:], math.Float64bits(v))
	case tensor.Float32:
		binary.NativeEndian.PutUint32(b[i*4:], math.Float32bits(float32(v)))
	}
}

func (d *dataset) get(b []byte, i int) float64 {
	switch d.cfg.DType {
	case tensor.Int64:
		return float64(int64(binary.NativeEndian.Uint64(b[i*8:])))
	case tensor.Float64:
		return math.Float64frombits(binary.NativeEndian.Uint64(b[i*8:]))
	case tensor.Float32:
		return float64(math.Float32frombits(binary.NativeEndian.Uint32(b[i*4:])))
	}
	return math.NaN()
}

// tensors returns rank r's inputs and outputs as tensors over its blocks,
// or, for a phantom run, tensors of their sizes on the meta device.
func (d *dataset) tensors(r int) (in, out []*tensor.Tensor) {
	if d.cfg.Phantom {
		s := d.spec(r)
		if d.cfg.Op == PointToPoint {
			return d.meta([]int{d.cfg.Count, d.cfg.Count}), nil
		}
		if s.InPlace {
			return d.meta([]int{d.cfg.Count}), nil
		}
		return d.meta(s.Blocks(algorithms.Input)), d.meta(s.Blocks(algorithms.Output))
	}
	return d.view(d.in[r]), d.view(d.out[r])
}

func (d *dataset) view(blocks [][]byte) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, len(blocks))
	for i, b := range blocks {
		ts[i], _ = tensor.FromBytes(d.cfg.DType, b, len(b)/d.elem)
	}
	return ts
}

func (d *dataset) meta(counts []int) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, len(counts))
	for i, n := range counts {
		ts[i], _ = tensor.NewMeta(d.cfg.DType, n)
	}
	return ts
}
