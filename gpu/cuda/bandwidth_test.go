package cuda

import (
	"fmt"
	"os"
	"testing"

	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// The benchmarks measure what the device's memory gives a copy and the
// reduction kernels, timed by events on the stream, not by the host's
// clock. Each reports GB/s, the bytes read and written per second, which
// a kernel that streams its operands brings close to the copy's, and
// algGB/s, the operand's size per second.

// benchSize is each kernel operand's size: large enough that caches do
// not count.
const benchSize = 256 << 20

// benchStream returns a stream of the first GPU's context, skipping
// where there is none; the fake driver's host memory says nothing about
// a GPU's.
func benchStream(b *testing.B) (*Context, *Stream) {
	b.Helper()
	if os.Getenv("GOCOMMS_FAKECUDA_DEVICES") != "" {
		b.Skip("skip: the fake driver's devices are host memory; bandwidth is measured on a GPU")
	}
	ctx := testContext(b, testDevices(b)[0])
	s := need{b}.stream(ctx.NewStream())
	b.Cleanup(func() { ok(b, s.Close()) })
	return ctx, s
}

// benchMem allocates n bytes of device memory, set to fill, freed when
// the benchmark ends.
func benchMem(b *testing.B, ctx *Context, n int, fill byte) *DeviceMemory {
	b.Helper()
	m := need{b}.mem(ctx.Alloc(n))
	b.Cleanup(func() { ok(b, m.Close()) })
	ok(b, ctx.Memset(m, 0, n, fill))
	return m
}

// timeOnDevice runs queue once to warm up (the first reduction loads the
// kernels), then b.N times between two events, and reports moved bytes,
// and size bytes of the operand, per second of device time.
func timeOnDevice(b *testing.B, ctx *Context, s *Stream, moved, size int, queue func() error) {
	b.Helper()
	start := need{b}.event(ctx.NewEvent())
	end := need{b}.event(ctx.NewEvent())
	defer func() { ok(b, start.Close()); ok(b, end.Close()) }()
	ok(b, queue())
	ok(b, s.Synchronize())
	b.ResetTimer()
	ok(b, start.Record(s))
	for range b.N {
		ok(b, queue())
	}
	ok(b, end.Record(s))
	ok(b, end.Synchronize())
	b.StopTimer()
	elapsed, err := end.Elapsed(start)
	ok(b, err)
	sec := elapsed.Seconds()
	b.ReportMetric(float64(moved)*float64(b.N)/sec/1e9, "GB/s")
	b.ReportMetric(float64(size)*float64(b.N)/sec/1e9, "algGB/s")
}

// BenchmarkDeviceCopy copies from one allocation to another on a stream
// (cuMemcpyDtoDAsync), 1 MiB to 1 GiB by powers of two, the sizes
// collectives are benchmarked at: each byte is read once and written
// once, and the small sizes show what a launch costs.
func BenchmarkDeviceCopy(b *testing.B) {
	for size := 1 << 20; size <= 1<<30; size *= 2 {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			ctx, s := benchStream(b)
			src := benchMem(b, ctx, size, 1)
			dst := benchMem(b, ctx, size, 0)
			timeOnDevice(b, ctx, s, 2*size, size, func() error {
				return s.CopyDtoD(dst, 0, src, 0, size)
			})
		})
	}
}

// BenchmarkDeviceCombine runs the Sum kernel, dst = a + b, on 256 MiB
// operands: two read, one written.
func BenchmarkDeviceCombine(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16} {
		b.Run("sum_"+dt.String(), func(b *testing.B) {
			ctx, s := benchStream(b)
			x := benchMem(b, ctx, benchSize, 0x3f) // small normal numbers in both dtypes
			y := benchMem(b, ctx, benchSize, 0x3e)
			dst := benchMem(b, ctx, benchSize, 0)
			sum := reduce.New(reduce.Sum)
			timeOnDevice(b, ctx, s, 3*benchSize, benchSize, func() error {
				return s.Combine(sum, dt, dst, 0, x, 0, y, 0, benchSize/dt.Size())
			})
		})
	}
}

// BenchmarkDeviceFold runs the Sum fold of a device group's all-reduce
// on 256 MiB ranges of one GPU: 2 and 4 sources, each also a destination,
// as one rank folds its share of every rank's buffer into every buffer.
func BenchmarkDeviceFold(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		b.Run(fmt.Sprintf("sum_float32_%d", ranks), func(b *testing.B) {
			ctx, s := benchStream(b)
			ranges := make([]TableRange, ranks)
			for i := range ranges {
				ranges[i] = TableRange{Mem: benchMem(b, ctx, benchSize, 0x3f), Len: benchSize}
			}
			tab, err := ctx.NewTable(ranges)
			ok(b, err)
			b.Cleanup(func() { ok(b, tab.Close()) })
			sum := reduce.New(reduce.Sum)
			timeOnDevice(b, ctx, s, 2*ranks*benchSize, benchSize, func() error {
				return s.Fold(sum, tensor.Float32, tab, ranks, 0, ranks, 0, benchSize/4)
			})
		})
	}
}
