package gocomms_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport/tcp"
)

// BenchmarkAllReduce measures in-process all-reduce of float32 sums as
// nccl-tests reports it: time per op (ns/op), algbw = bytes/time and
// busbw = algbw × 2(p-1)/p, and allocations per op summed over all ranks.
func BenchmarkAllReduce(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		for _, size := range []int{8, 64 << 10, 1 << 20, 64 << 20} {
			b.Run(fmt.Sprintf("ranks=%d/bytes=%d", ranks, size), func(b *testing.B) {
				benchAllReduce(b, ranks, size)
			})
		}
	}
}

// BenchmarkAllReduceTCP is BenchmarkAllReduce with the ranks connected
// over loopback TCP instead of in-process queues.
func BenchmarkAllReduceTCP(b *testing.B) {
	for _, size := range []int{8, 1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("ranks=2/bytes=%d", size), func(b *testing.B) {
			benchAllReduce(b, 2, size, gocomms.WithNetwork(tcp.New()))
		})
	}
}

func benchAllReduce(b *testing.B, ranks, size int, opts ...gocomms.Option) {
	benchOp(b, ranks, func(c *gocomms.Comm) func(context.Context) error {
		t := gocomms.FromSlice(make([]float32, size/4))
		return func(ctx context.Context) error { return c.AllReduce(ctx, t, gocomms.Sum) }
	}, opts...)
	if b.Failed() {
		return
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	algbw := float64(size) / sec / 1e9
	b.ReportMetric(algbw, "algbw_GB/s")
	b.ReportMetric(algbw*2*float64(ranks-1)/float64(ranks), "busbw_GB/s")
}

// BenchmarkCollectives measures each blocking operation of steadyOps
// between 2 in-process ranks, over blocks of the given bytes per rank:
// time per op and allocations per op summed over all ranks.
func BenchmarkCollectives(b *testing.B) {
	for _, op := range steadyOps {
		for _, size := range op.sizes() {
			b.Run(fmt.Sprintf("op=%s/bytes=%d", op.name, size), func(b *testing.B) {
				benchOp(b, 2, func(c *gocomms.Comm) func(context.Context) error { return op.make(c, size, floats) })
			})
		}
	}
}

// benchOp times the operation that mk makes on each of ranks in-process
// ranks.
func benchOp(b *testing.B, ranks int, mk func(c *gocomms.Comm) func(context.Context) error, opts ...gocomms.Option) {
	b.ReportAllocs()
	err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
		op := mk(c)
		for range 3 { // warm pools and schedules
			if err := op(ctx); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for range b.N {
			if err := op(ctx); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.StopTimer()
		}
		return nil
	}, opts...)
	if err != nil {
		b.Fatal(err)
	}
}

// steadyOp is a blocking operation: make returns one call of it on c
// over float32 blocks of size bytes per rank, in tensors that newTensor
// makes.
type steadyOp struct {
	name string
	make func(c *gocomms.Comm, size int, newTensor func(elems int) *gocomms.Tensor) func(context.Context) error
}

// floats makes a float32 tensor of elems elements.
func floats(elems int) *gocomms.Tensor { return gocomms.FromSlice(make([]float32, elems)) }

// list makes one tensor of elems elements per rank of c.
func list(c *gocomms.Comm, elems int, newTensor func(int) *gocomms.Tensor) []*gocomms.Tensor {
	ts := make([]*gocomms.Tensor, c.Size())
	for i := range ts {
		ts[i] = newTensor(elems)
	}
	return ts
}

// sizes are the block sizes op is measured at, below and above the size
// from which sends lend their payload; a barrier moves no data.
func (op steadyOp) sizes() []int {
	if op.name == "barrier" {
		return []int{0}
	}
	return []int{8, 1 << 20}
}

var steadyOps = []steadyOp{
	{"all_reduce+reduce+broadcast", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		x := newTensor(size / 4)
		return func(ctx context.Context) error {
			if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
				return err
			}
			if err := c.Reduce(ctx, x, 1, gocomms.Max); err != nil {
				return err
			}
			return c.Broadcast(ctx, x, 0)
		}
	}},
	{"all_gather+all_gather_v", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		in, outs := newTensor(size/4), list(c, size/4, newTensor)
		return func(ctx context.Context) error {
			if err := c.AllGather(ctx, outs, in); err != nil {
				return err
			}
			return c.AllGatherV(ctx, outs, in)
		}
	}},
	{"all_gather_single", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		in, out := newTensor(size/4), newTensor(c.Size()*size/4)
		return func(ctx context.Context) error { return c.AllGatherSingle(ctx, out, in) }
	}},
	{"reduce_scatter+reduce_scatter_v", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		ins, out := list(c, size/4, newTensor), newTensor(size/4)
		return func(ctx context.Context) error {
			if err := c.ReduceScatter(ctx, out, ins, gocomms.Sum); err != nil {
				return err
			}
			return c.ReduceScatterV(ctx, out, ins, gocomms.Max)
		}
	}},
	{"reduce_scatter_single", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		in, out := newTensor(c.Size()*size/4), newTensor(size/4)
		return func(ctx context.Context) error { return c.ReduceScatterSingle(ctx, out, in, gocomms.Sum) }
	}},
	{"all_to_all", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		ins, outs := list(c, size/4, newTensor), list(c, size/4, newTensor)
		return func(ctx context.Context) error { return c.AllToAll(ctx, outs, ins) }
	}},
	{"all_to_all_single", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		in, out := newTensor(c.Size()*size/4), newTensor(c.Size()*size/4)
		return func(ctx context.Context) error { return c.AllToAllSingle(ctx, out, in) }
	}},
	{"all_to_all_v", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		in, out := newTensor(c.Size()*size/4), newTensor(c.Size()*size/4)
		splits := slices.Repeat([]int{size / 4}, c.Size())
		return func(ctx context.Context) error { return c.AllToAllV(ctx, out, in, splits, splits) }
	}},
	// The scatter from the gather's root keeps the other ranks from
	// running ahead of it, whose early frames its links would stash.
	{"gather+scatter", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		x, xs := newTensor(size/4), list(c, size/4, newTensor)
		return func(ctx context.Context) error {
			if err := c.Gather(ctx, xs, x, 0); err != nil {
				return err
			}
			return c.Scatter(ctx, x, xs, 0)
		}
	}},
	{"barrier", func(c *gocomms.Comm, _ int, _ func(int) *gocomms.Tensor) func(context.Context) error {
		return func(ctx context.Context) error { return c.Barrier(ctx) }
	}},
	// Sends of up to 1 MiB are eager, so every rank may send before it
	// receives.
	{"send+recv", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		x, y := newTensor(size/4), newTensor(size/4)
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		return func(ctx context.Context) error {
			if err := c.Send(ctx, x, next); err != nil {
				return err
			}
			return c.Recv(ctx, y, prev)
		}
	}},
	{"batch", func(c *gocomms.Comm, size int, newTensor func(int) *gocomms.Tensor) func(context.Context) error {
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		b := c.NewBatch().Send(newTensor(size/4), next).Recv(newTensor(size/4), prev)
		return func(ctx context.Context) error { return b.Issue(ctx) }
	}},
}

// TestSteadyOperationsAllocateNothing: once warm, each blocking
// operation of steadyOps between in-process ranks allocates nothing,
// summed over the ranks. The race detector's pools drop what they are
// given, so it is not measured there.
func TestSteadyOperationsAllocateNothing(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's pools drop what they are given")
	}
	// A small flight recorder wraps during the warm-up: until it has, a
	// point-to-point entry's list of peers is new.
	t.Setenv("TORCHCOMM_FR_BUFFER_SIZE", "64")
	const runs = 200
	for _, op := range steadyOps {
		for _, ranks := range []int{2, 3} {
			for _, size := range op.sizes() {
				t.Run(fmt.Sprintf("%s/ranks=%d/bytes=%d", op.name, ranks, size), func(t *testing.T) {
					if allocs := steadyAllocs(t, op, ranks, size, runs); allocs != 0 {
						t.Errorf("%v allocations per %s", allocs, op.name)
					}
				})
			}
		}
	}
}

// steadyAllocs returns the allocations per call of op, summed over ranks,
// once warm.
func steadyAllocs(t *testing.T, op steadyOp, ranks, size, runs int) float64 {
	var allocs float64
	err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
		call := op.make(c, size, floats)
		// Warm plans, links and pools: a link keeps up to 64 small frames
		// until the peer acknowledges them.
		for range 100 {
			if err := call(ctx); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		var err error
		if c.Rank() == 0 {
			allocs = testing.AllocsPerRun(runs, func() {
				if e := call(ctx); e != nil && err == nil {
					err = e
				}
			})
		} else {
			for range runs + 1 { // AllocsPerRun runs once more, to warm up
				if err = call(ctx); err != nil {
					break
				}
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return allocs
}

// TestCollectivesKeepNoTensor: once blocking collectives have returned,
// what the communicator keeps for reuse holds none of their tensors.
func TestCollectivesKeepNoTensor(t *testing.T) {
	for _, size := range []int{8, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
				held, err := collectivesOnce(ctx, c, size)
				if err != nil {
					return err
				}
				// Each rank lets go of an operation's request, and a link
				// of a lent payload, soon after it ends: the ranks look
				// until none sees its tensors, agreeing on when to stop.
				alive := false
				for range 100 {
					runtime.GC()
					alive = slices.ContainsFunc(held, func(p weak.Pointer[float32]) bool { return p.Value() != nil })
					flag := []int32{0}
					if alive {
						flag[0] = 1
					}
					if err := c.AllReduce(ctx, gocomms.FromSlice(flag), gocomms.Max); err != nil {
						return err
					}
					if flag[0] == 0 {
						return nil
					}
					time.Sleep(time.Millisecond)
				}
				if alive {
					return fmt.Errorf("rank %d: tensors of finished collectives are still reachable", c.Rank())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// collectivesOnce runs each blocking operation of steadyOps over blocks
// of size bytes, twice, and returns weak pointers to the tensors' memory.
func collectivesOnce(ctx context.Context, c *gocomms.Comm, size int) ([]weak.Pointer[float32], error) {
	var held []weak.Pointer[float32]
	tensor := func(n int) *gocomms.Tensor {
		// At least 16 B, which the tiny allocator would not pack in with
		// other objects that could keep it alive.
		s := make([]float32, n, max(n, 4))
		held = append(held, weak.Make(&s[0]))
		return gocomms.FromSlice(s)
	}
	var calls []func(context.Context) error
	for _, op := range steadyOps {
		calls = append(calls, op.make(c, size, tensor))
	}
	for range 2 {
		for _, call := range calls {
			if err := call(ctx); err != nil {
				return nil, err
			}
		}
	}
	return held, nil
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
