package nccl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/tensor"
)

// The dtypes NCCL reduces, and two it does not, which only move.
var (
	reducible = []tensor.DType{tensor.Int8, tensor.Uint8, tensor.Int32, tensor.Uint32, tensor.Int64,
		tensor.Uint64, tensor.Float16, tensor.Float32, tensor.Float64, tensor.BFloat16}
	movable = []tensor.DType{tensor.Float32, tensor.Int64, tensor.BFloat16, tensor.Bool, tensor.Int16}
)

// opsFor returns the reductions NCCL has for dt.
func opsFor(dt tensor.DType) []reduce.Op {
	ops := []reduce.Op{reduce.New(reduce.Sum), reduce.New(reduce.Product), reduce.New(reduce.Min),
		reduce.New(reduce.Max), reduce.New(reduce.Avg)}
	if dt.IsFloat() {
		ops = append(ops, reduce.PreMul(0.5))
	}
	return ops
}

// countsFor returns the element counts tested on n ranks: none, one,
// fewer than ranks, and many.
func countsFor(n int) []int {
	return slices.Compact(slices.Sorted(slices.Values([]int{0, 1, max(n-1, 0), 1000})))
}

// value is rank r's element i, small enough that every reduction of up to
// four ranks is exact in every dtype: in [-2, 2], or [0, 3] unsigned, or
// 0 and 1 for bool.
func value(dt tensor.DType, r, i, salt int) float64 {
	switch {
	case dt == tensor.Bool:
		return float64((r + i + salt) % 2)
	case dt.IsSigned():
		return float64(((r+1)*(i+3)+salt)%5 - 2)
	default:
		return float64(((r+1)*(i+3) + salt) % 4)
	}
}

func values(dt tensor.DType, r, n, salt int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = value(dt, r, i, salt)
	}
	return v
}

// reference reduces rank r's vals[r] with op, as NCCL defines it.
func reference(op reduce.Op, dt tensor.DType, vals [][]float64) []float64 {
	out := slices.Clone(vals[0])
	for i := range out {
		acc := vals[0][i] * op.Factor()
		for _, v := range vals[1:] {
			x := v[i] * op.Factor()
			switch op.Kind() {
			case reduce.Product:
				acc *= x
			case reduce.Min:
				acc = min(acc, x)
			case reduce.Max:
				acc = max(acc, x)
			default:
				acc += x
			}
		}
		if op.Kind() == reduce.Avg {
			acc /= float64(len(vals))
			if !dt.IsFloat() {
				acc = math.Trunc(acc)
			}
		}
		out[i] = acc
	}
	return out
}

// check compares got with want: exactly for integers, within the dtype's
// rounding for floats.
func expect(t *testing.T, what string, dt tensor.DType, got, want []float64) {
	t.Helper()
	tol := map[tensor.DType]float64{tensor.Float16: 2e-3, tensor.BFloat16: 1e-2, tensor.Float32: 1e-6, tensor.Float64: 1e-12}[dt]
	if len(got) != len(want) {
		t.Errorf("%s: %d elements, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*max(1, math.Abs(want[i])) {
			t.Errorf("%s: element %d = %v, want %v", what, i, got[i], want[i])
			return
		}
	}
}

func TestDeviceAllReduce(t *testing.T) {
	cu := device(t)
	for n := 1; n <= 4; n++ {
		ranks(t, n, func(ctx context.Context, r int, c *gocomms.Comm) {
			for _, dt := range reducible {
				for _, op := range opsFor(dt) {
					for _, count := range countsFor(n) {
						all := make([][]float64, n)
						for q := range n {
							all[q] = values(dt, q, count, 0)
						}
						d := upload(t, cu, dt, all[r])
						if err := c.AllReduce(ctx, d, op); err != nil {
							t.Errorf("rank %d: all_reduce %v %v of %d: %v", r, dt, op, count, err)
							return
						}
						expect(t, fmt.Sprintf("%d ranks: rank %d: all_reduce %v %v of %d", n, r, dt, op, count),
							dt, download(t, cu, d), reference(op, dt, all))
					}
				}
			}
		})
	}
}

// TestDeviceCollectives runs every other collective, on every root, over
// the dtypes that move and a few reductions.
func TestDeviceCollectives(t *testing.T) {
	cu := device(t)
	ops := []reduce.Op{reduce.New(reduce.Sum), reduce.New(reduce.Max), reduce.New(reduce.Avg)}
	for n := 1; n <= 4; n++ {
		ranks(t, n, func(ctx context.Context, r int, c *gocomms.Comm) {
			fail := func(what string, err error) bool {
				if err != nil {
					t.Errorf("%d ranks: rank %d: %s: %v", n, r, what, err)
				}
				return err != nil
			}
			for _, count := range countsFor(n) {
				// vals(q, salt) is rank q's input; vcount(q) rank q's count
				// in the v forms.
				vcount := func(q int) int { return count + q }
				for _, dt := range reducible[6:] { // the floats, then again below as moves
					for _, op := range ops {
						all := make([][]float64, n)
						for q := range n {
							all[q] = values(dt, q, count, 1)
						}
						want := reference(op, dt, all)
						for root := range n {
							d := upload(t, cu, dt, all[r])
							if fail("reduce", c.Reduce(ctx, d, root, op)) {
								return
							}
							if r == root {
								expect(t, fmt.Sprintf("reduce %v %v of %d to %d", dt, op, count, root), dt, download(t, cu, d), want)
							} else {
								expect(t, "reduce's input", dt, download(t, cu, d), all[r])
							}
						}
						// reduce_scatter: rank q's block j is values(q, count, j)
						blocks := func(q int, counts func(int) int) [][]float64 {
							b := make([][]float64, n)
							for j := range n {
								b[j] = values(dt, q, counts(j), j+2)
							}
							return b
						}
						wantBlock := func(counts func(int) int) []float64 {
							in := make([][]float64, n)
							for q := range n {
								in[q] = blocks(q, counts)[r]
							}
							return reference(op, dt, in)
						}
						same := func(int) int { return count }
						mine := blocks(r, same)
						list := make([]*tensor.Tensor, n)
						for j := range n {
							list[j] = upload(t, cu, dt, mine[j])
						}
						for k, in := range [][]*tensor.Tensor{list, views(t, cu, dt, mine)} {
							what := []string{"reduce_scatter (list)", "reduce_scatter (views)"}[k]
							out := upload(t, cu, dt, make([]float64, count))
							if fail(what, c.ReduceScatter(ctx, out, in, op)) {
								return
							}
							expect(t, fmt.Sprintf("%s %v %v of %d", what, dt, op, count), dt, download(t, cu, out), wantBlock(same))
						}
						var flat []float64
						for _, b := range mine {
							flat = append(flat, b...)
						}
						out := upload(t, cu, dt, make([]float64, count))
						if fail("reduce_scatter_single", c.ReduceScatterSingle(ctx, out, upload(t, cu, dt, flat), op)) {
							return
						}
						expect(t, fmt.Sprintf("reduce_scatter_single %v %v of %d", dt, op, count), dt, download(t, cu, out), wantBlock(same))
						vmine := blocks(r, vcount)
						vin := views(t, cu, dt, vmine)
						out = upload(t, cu, dt, make([]float64, vcount(r)))
						if fail("reduce_scatter_v", c.ReduceScatterV(ctx, out, vin, op)) {
							return
						}
						expect(t, fmt.Sprintf("reduce_scatter_v %v %v", dt, op), dt, download(t, cu, out), wantBlock(vcount))
					}
				}
				for _, dt := range movable {
					moves(t, cu, ctx, c, n, r, dt, count, fail)
				}
			}
			if fail("barrier", c.Barrier(ctx)) {
				return
			}
		})
	}
}

// moves runs the collectives that only move data.
func moves(t *testing.T, cu *cuda.Context, ctx context.Context, c *gocomms.Comm, n, r int, dt tensor.DType, count int,
	fail func(string, error) bool) {
	for root := range n {
		d := upload(t, cu, dt, values(dt, r, count, 3))
		if fail("broadcast", c.Broadcast(ctx, d, root)) {
			return
		}
		expect(t, fmt.Sprintf("broadcast %v of %d from %d", dt, count, root), dt, download(t, cu, d), values(dt, root, count, 3))

		// gather and scatter
		outs := make([]*tensor.Tensor, n)
		for q := range outs {
			outs[q] = upload(t, cu, dt, make([]float64, count))
		}
		if fail("gather", c.Gather(ctx, outs, upload(t, cu, dt, values(dt, r, count, 4)), root)) {
			return
		}
		if r == root {
			for q := range n {
				expect(t, fmt.Sprintf("gather %v of %d to %d: from %d", dt, count, root, q), dt, download(t, cu, outs[q]), values(dt, q, count, 4))
			}
		}
		ins := make([]*tensor.Tensor, n)
		for q := range ins {
			ins[q] = upload(t, cu, dt, values(dt, q, count, 5+root))
		}
		out := upload(t, cu, dt, make([]float64, count))
		if fail("scatter", c.Scatter(ctx, out, ins, root)) {
			return
		}
		expect(t, fmt.Sprintf("scatter %v of %d from %d", dt, count, root), dt, download(t, cu, out), values(dt, r, count, 5+root))
	}

	// all_gather: lists of tensors apart and of views of one, single, v
	in := upload(t, cu, dt, values(dt, r, count, 6))
	zeros := make([][]float64, n)
	for q := range zeros {
		zeros[q] = make([]float64, count)
	}
	apart := make([]*tensor.Tensor, n)
	for q := range apart {
		apart[q] = upload(t, cu, dt, zeros[q])
	}
	for k, outs := range [][]*tensor.Tensor{apart, views(t, cu, dt, zeros)} {
		what := []string{"all_gather (list)", "all_gather (views)"}[k]
		if fail(what, c.AllGather(ctx, outs, in)) {
			return
		}
		for q := range n {
			expect(t, fmt.Sprintf("%s %v of %d: from %d", what, dt, count, q), dt, download(t, cu, outs[q]), values(dt, q, count, 6))
		}
	}
	whole := upload(t, cu, dt, make([]float64, n*count))
	if fail("all_gather_single", c.AllGatherSingle(ctx, whole, in)) {
		return
	}
	var want []float64
	for q := range n {
		want = append(want, values(dt, q, count, 6)...)
	}
	expect(t, fmt.Sprintf("all_gather_single %v of %d", dt, count), dt, download(t, cu, whole), want)
	vouts := make([]*tensor.Tensor, n)
	for q := range vouts {
		vouts[q] = upload(t, cu, dt, make([]float64, count+q))
	}
	if fail("all_gather_v", c.AllGatherV(ctx, vouts, upload(t, cu, dt, values(dt, r, count+r, 7)))) {
		return
	}
	for q := range n {
		expect(t, fmt.Sprintf("all_gather_v %v: from %d", dt, q), dt, download(t, cu, vouts[q]), values(dt, q, count+q, 7))
	}

	// all_to_all: rank q sends block j, of values(q, count, 10*j), to j
	block := func(q, j, k int) []float64 { return values(dt, q, k, 10*j+q) }
	ins := make([]*tensor.Tensor, n)
	outs := make([]*tensor.Tensor, n)
	var flat []float64
	for j := range n {
		ins[j] = upload(t, cu, dt, block(r, j, count))
		outs[j] = upload(t, cu, dt, make([]float64, count))
		flat = append(flat, block(r, j, count)...)
	}
	if fail("all_to_all", c.AllToAll(ctx, outs, ins)) {
		return
	}
	want = nil
	for q := range n {
		expect(t, fmt.Sprintf("all_to_all %v of %d: from %d", dt, count, q), dt, download(t, cu, outs[q]), block(q, r, count))
		want = append(want, block(q, r, count)...)
	}
	whole = upload(t, cu, dt, make([]float64, n*count))
	if fail("all_to_all_single", c.AllToAllSingle(ctx, whole, upload(t, cu, dt, flat))) {
		return
	}
	expect(t, fmt.Sprintf("all_to_all_single %v of %d", dt, count), dt, download(t, cu, whole), want)
	// all_to_all_v: rank q sends q+j rows to j
	var vin, vwant []float64
	inSplits, outSplits := make([]int, n), make([]int, n)
	for j := range n {
		inSplits[j], outSplits[j] = r+j+count%3, j+r+count%3
		vin = append(vin, block(r, j, inSplits[j])...)
		vwant = append(vwant, block(j, r, outSplits[j])...)
	}
	vout := upload(t, cu, dt, make([]float64, len(vwant)))
	if fail("all_to_all_v", c.AllToAllV(ctx, vout, upload(t, cu, dt, vin), outSplits, inSplits)) {
		return
	}
	expect(t, fmt.Sprintf("all_to_all_v %v", dt), dt, download(t, cu, vout), vwant)
}

// TestDeviceP2P sends around a ring, one message at a time and in a
// batch to every peer.
func TestDeviceP2P(t *testing.T) {
	cu := device(t)
	for n := 2; n <= 4; n++ {
		ranks(t, n, func(ctx context.Context, r int, c *gocomms.Comm) {
			for _, count := range countsFor(n) {
				dt := tensor.Float32
				next, prev := (r+1)%n, (r+n-1)%n
				out := upload(t, cu, dt, make([]float64, count))
				sw := c.SendAsync(upload(t, cu, dt, values(dt, r, count, 8)), next)
				if err := c.Recv(ctx, out, prev); err != nil {
					t.Errorf("rank %d: recv: %v", r, err)
					return
				}
				if err := sw.Wait(ctx); err != nil {
					t.Errorf("rank %d: send: %v", r, err)
					return
				}
				expect(t, fmt.Sprintf("recv of %d", count), dt, download(t, cu, out), values(dt, prev, count, 8))

				b := c.NewBatch()
				outs := make([]*tensor.Tensor, n)
				for q := range n {
					if q == r {
						continue
					}
					outs[q] = upload(t, cu, tensor.Int16, make([]float64, count+q))
					b.Recv(outs[q], q)
					b.Send(upload(t, cu, tensor.Int16, values(tensor.Int16, r, count+r, q)), q)
				}
				if err := b.Issue(ctx); err != nil {
					t.Errorf("rank %d: batch: %v", r, err)
					return
				}
				for q := range n {
					if q != r {
						expect(t, fmt.Sprintf("batch of %d from %d", count, q), tensor.Int16, download(t, cu, outs[q]), values(tensor.Int16, q, count+q, r))
					}
				}
			}
		})
	}
}

// TestDeviceStream orders an all-reduce after work queued on the caller's
// stream, and work queued after WaitStream after the all-reduce.
func TestDeviceStream(t *testing.T) {
	cu := device(t)
	const n, count = 3, 100
	dt := tensor.Float32
	ranks(t, n, func(ctx context.Context, r int, c *gocomms.Comm) {
		s, err := cu.NewStream()
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Close()
		d := upload(t, cu, dt, make([]float64, count))
		src := upload(t, cu, dt, values(dt, r, count, 9))
		res := upload(t, cu, dt, make([]float64, count))
		dm := func(x *tensor.Tensor) *cuda.DeviceMemory { m, _ := x.Memory(); return m.(*cuda.DeviceMemory) }
		if err := s.CopyDtoD(dm(d), 0, dm(src), 0, d.NBytes()); err != nil {
			t.Error(err)
			return
		}
		w := c.AllReduceAsync(d, reduce.New(reduce.Sum), gocomms.OnStream(s))
		if err := w.WaitStream(ctx, s); err != nil {
			t.Errorf("rank %d: WaitStream: %v", r, err)
			return
		}
		if err := s.CopyDtoD(dm(res), 0, dm(d), 0, d.NBytes()); err != nil {
			t.Error(err)
			return
		}
		if err := s.Synchronize(); err != nil {
			t.Error(err)
		}
		all := make([][]float64, n)
		for q := range n {
			all[q] = values(dt, q, count, 9)
		}
		expect(t, "all_reduce on the caller's stream", dt, download(t, cu, res), reference(reduce.New(reduce.Sum), dt, all))
		if err := w.Wait(ctx); err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	})
}

// TestDeviceUnsupported checks the errors for what NCCL lacks.
func TestDeviceUnsupported(t *testing.T) {
	cu := device(t)
	ranks(t, 2, func(ctx context.Context, r int, c *gocomms.Comm) {
		err := c.AllReduce(ctx, upload(t, cu, tensor.Int16, make([]float64, 4)), reduce.New(reduce.Sum))
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, commerr.ErrInvalidArgument) || !strings.Contains(err.Error(), "int16") {
			t.Errorf("rank %d: all_reduce of int16: %v; want ErrUnsupported naming int16", r, err)
		}
		err = c.AllReduce(ctx, upload(t, cu, tensor.Int32, make([]float64, 4)), reduce.New(reduce.BXor))
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "NCCL has no bitwise reductions") {
			t.Errorf("rank %d: all_reduce bxor: %v; want ErrUnsupported", r, err)
		}
		// the communicator still works
		d := upload(t, cu, tensor.Int32, []float64{1, 2})
		if err := c.AllReduce(ctx, d, reduce.New(reduce.Sum)); err != nil {
			t.Errorf("rank %d: all_reduce after the errors: %v", r, err)
		}
		expect(t, "all_reduce after the errors", tensor.Int32, download(t, cu, d), []float64{2, 4})
	})
}

// TestDeviceTimeout: an all-reduce that rank 1 never issues times out on
// rank 0, which aborts its communicator.
func TestDeviceTimeout(t *testing.T) {
	cu := device(t)
	ranks(t, 2, func(ctx context.Context, r int, c *gocomms.Comm) {
		if r == 1 {
			return
		}
		d := upload(t, cu, tensor.Float32, []float64{1})
		begin := time.Now()
		err := c.AllReduce(ctx, d, reduce.New(reduce.Sum), gocomms.OpTimeout(200*time.Millisecond))
		if !errors.Is(err, commerr.ErrTimeout) || !strings.Contains(err.Error(), "NCCL") {
			t.Errorf("all_reduce without a peer: %v; want a timeout in NCCL", err)
		}
		t.Logf("timed out after %v: %v", time.Since(begin), err)
		err = c.Barrier(ctx)
		if !errors.Is(err, commerr.ErrTimeout) {
			t.Errorf("barrier after the abort: %v; want the timeout", err)
		}
	})
}

// TestDeviceCommSplit splits a communicator by parity through the front,
// whose exchange of the groups moves through device tensors, and
// all-reduces in each part.
func TestDeviceCommSplit(t *testing.T) {
	cu := device(t)
	const n = 3
	ranks(t, n, func(ctx context.Context, r int, c *gocomms.Comm) {
		sub, err := c.SplitByColor(ctx, r%2, r)
		if err != nil {
			t.Errorf("rank %d: split: %v", r, err)
			return
		}
		defer sub.Finalize(ctx)
		d := upload(t, cu, tensor.Int64, []float64{float64(r), 1})
		if err := sub.AllReduce(ctx, d, reduce.New(reduce.Sum)); err != nil {
			t.Errorf("rank %d: all_reduce in the split: %v", r, err)
			return
		}
		sum, size := 0, 0
		for q := r % 2; q < n; q += 2 {
			sum, size = sum+q, size+1
		}
		expect(t, fmt.Sprintf("rank %d: all_reduce in the split", r), tensor.Int64, download(t, cu, d),
			[]float64{float64(sum), float64(size)})
	})
}

// TestDeviceSplit splits four ranks into {0, 1}, {2} and none with
// ncclCommSplit, driving the backends directly, and all-reduces in each
// group.
func TestDeviceSplit(t *testing.T) {
	cu := device(t)
	const n = 4
	needGPUs(t, n)
	spawn(t, n, func(ctx context.Context, r int, st store.Store) {
		config := func(name string, r, size int) *backend.Config {
			return &backend.Config{Name: name, Device: tensor.CUDA(cu.Device().Ordinal()), Rank: r, Size: size,
				Store: st, Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)}
		}
		b, err := New(ctx, config(t.Name(), r, n))
		if err != nil {
			t.Error(err)
			return
		}
		defer b.Finalize(ctx)
		var none []int
		group := []int{0, 1}
		switch r {
		case 2:
			group = []int{2}
		case 3:
			group, none = nil, []int{3} // rank 3 joins no group
		}
		child, err := b.Split(ctx, group, config(t.Name()+"/half", slices.Index(group, r), len(group)), nil)
		if err != nil || (child == nil) != (none != nil) {
			t.Errorf("rank %d: split: %v, %v", r, child, err)
			return
		}
		if child == nil {
			return
		}
		defer child.Finalize(ctx)
		d := upload(t, cu, tensor.Int64, []float64{float64(r), 1})
		done := make(completion)
		child.Issue(&backend.Op{Name: backend.OpAllReduce, Kind: algorithms.AllReduce, DType: tensor.Int64,
			Reduce: reduce.New(reduce.Sum), Root: -1, Counts: []int{2}, Inputs: []*tensor.Tensor{d},
			Outputs: []*tensor.Tensor{d}, Timeout: 10 * time.Second}, done)
		if err := <-done; err != nil {
			t.Errorf("rank %d: all_reduce in the split: %v", r, err)
			return
		}
		sum := 0
		for _, q := range group {
			sum += q
		}
		expect(t, fmt.Sprintf("rank %d: all_reduce in the split", r), tensor.Int64, download(t, cu, d),
			[]float64{float64(sum), float64(len(group))})
	})
}

// TestDeviceDuplicateGPU puts two ranks of a communicator on cuda:0, in
// one process and in two, which NCCL refuses: every rank fails with
// ncclInvalidUsage.
func TestDeviceDuplicateGPU(t *testing.T) {
	device(t)
	refused := func(r int, err error) {
		var e *ncclError
		if !errors.As(err, &e) || e.code != 5 || e.text != "invalid usage (run with NCCL_DEBUG=WARN for details)" {
			t.Errorf("rank %d on the other's GPU: %v; want ncclInvalidUsage", r, err)
		}
	}
	join := func(ctx context.Context, r int, st store.Store, name string) error {
		c, err := gocomms.NewComm(ctx, Name, tensor.CUDA(0), name, gocomms.WithRank(r), gocomms.WithSize(2),
			gocomms.WithStore(st), gocomms.WithTimeout(30*time.Second))
		if err == nil {
			_ = c.Finalize(ctx)
		}
		return err
	}
	spawn(t, 1, func(ctx context.Context, _ int, _ store.Store) {
		st := store.NewMemory()
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Go(func() { refused(r, join(ctx, r, st, t.Name()+"/one process")) })
		}
		wg.Wait()
	})
	spawn(t, 2, func(ctx context.Context, r int, st store.Store) {
		refused(r, join(ctx, r, st, t.Name()+"/two processes"))
	})
}

// TestDeviceInvalidRank joins a communicator of two ranks as rank 2,
// which NCCL refuses with ncclInvalidArgument before looking for peers.
func TestDeviceInvalidRank(t *testing.T) {
	device(t)
	spawn(t, 1, func(ctx context.Context, _ int, _ store.Store) {
		cu, err := cuda.Shared(0)
		if err == nil {
			_, err = Locate()
		}
		if err == nil {
			err = bindCUDA()
		}
		if err != nil {
			t.Fatal(err)
		}
		id, err := sysUniqueID()
		if err != nil {
			t.Fatal(err)
		}
		_, err = sysInit(cu.Handle(), 2, 2, id)
		var e *ncclError
		if !errors.As(err, &e) || e.code != 4 {
			t.Errorf("rank 2 of 2: %v; want ncclInvalidArgument", err)
		}
	})
}

// completion passes an operation's end.
type completion chan error

func (completion) Started()             {}
func (c completion) Finished(err error) { c <- err }

// TestDeviceAlloc all-reduces in tensors the communicator allocates.
func TestDeviceAlloc(t *testing.T) {
	cu := device(t)
	ranks(t, 2, func(ctx context.Context, r int, c *gocomms.Comm) {
		d, err := c.Alloc(tensor.Float32, 2, 3)
		if err != nil {
			t.Error(err)
			return
		}
		if d.Device() != tensor.CUDA(r) {
			t.Errorf("Alloc: a tensor on %v", d.Device())
		}
		expect(t, "Alloc's zeros", tensor.Float32, download(t, cu, d), make([]float64, 6))
		if err := c.AllReduce(ctx, d, reduce.New(reduce.Max)); err != nil {
			t.Error(err)
		}
		if err := c.Free(d); err != nil {
			t.Error(err)
		}
		if err := c.Free(d); err == nil {
			t.Error("a second Free succeeded")
		}
	})
}
