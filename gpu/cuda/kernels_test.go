package cuda

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// TestKernelsPTXCurrent checks, without nvcc, that the embedded PTX was
// generated from kernels/reduce.cu as it is (go generate writes the
// source's sha256 on its first line), and that it holds exactly the
// kernels the package launches.
func TestKernelsPTXCurrent(t *testing.T) {
	src, err := os.ReadFile("kernels/reduce.cu")
	ok(t, err)
	sum := sha256.Sum256(src)
	first, _, _ := bytes.Cut(reducePTX, []byte("\n"))
	if want := "// reduce.cu sha256 " + hex.EncodeToString(sum[:]); string(first) != want {
		t.Fatalf("kernels/reduce.ptx starts %q, want %q: kernels/reduce.cu changed since the PTX was "+
			"generated; run `go generate ./gpu/cuda/...` with nvcc installed", first, want)
	}
	var entries []string
	sc := bufio.NewScanner(bytes.NewReader(reducePTX))
	entry := regexp.MustCompile(`^\.visible \.entry (\w+)\($`)
	for sc.Scan() {
		if m := entry.FindStringSubmatch(sc.Text()); m != nil {
			entries = append(entries, m[1])
		}
	}
	names := kernelNames()
	slices.Sort(entries)
	slices.Sort(names)
	if !slices.Equal(entries, names) {
		t.Errorf("the PTX's kernels:\n%v\nthe package's:\n%v", entries, names)
	}
}

func TestKernelNames(t *testing.T) {
	names := kernelNames()
	// 13 dtypes with sum, product, min and max; 8 integers and bool with
	// band, bor and bxor; avg for 12 numeric dtypes; premul_sum for 4;
	// and a fold for each.
	if want := 2 * (13*4 + 9*3 + 12 + 4); len(names) != want {
		t.Errorf("%d kernels, want %d", len(names), want)
	}
	for _, name := range []string{"gc_sum_bool", "gc_product_i8", "gc_bxor_u64", "gc_min_bf16",
		"gc_avg_i32", "gc_premul_sum_f16", "gc_fold_sum_bool", "gc_fold_avg_i64", "gc_fold_premul_sum_bf16"} {
		if !slices.Contains(names, name) {
			t.Errorf("no kernel %s", name)
		}
	}
	if got := combineKernel(reduce.PreMulSum, tensor.Float32); got != "gc_sum_f32" {
		t.Errorf("premul_sum combines with %s, want gc_sum_f32", got)
	}
	if gridSize(1) != 1 || gridSize(blockSize+1) != 2 || gridSize(math.MaxInt32) != maxBlocks {
		t.Error("gridSize does not cover small counts with one thread each, or cap large ones")
	}
}

// specials are the bit patterns a random operand is made of a third of
// the time: NaNs (quiet, signaling, negative), infinities, zeros of both
// signs, the extreme subnormals and normals, ±1, 1/2; and for integers,
// the values that wrap.
var specials = map[tensor.DType][]uint64{
	tensor.Float16: {0x7e00, 0x7d01, 0xfe01, 0x7c00, 0xfc00, 0, 0x8000, 1, 0x83ff, 0x0400, 0x7bff,
		0x3c00, 0xbc00, 0x3800},
	tensor.BFloat16: {0x7fc0, 0x7fa1, 0xffc1, 0x7f80, 0xff80, 0, 0x8000, 1, 0x807f, 0x0080, 0x7f7f,
		0x3f80, 0xbf80, 0x3f00},
	tensor.Float32: {0x7fc00000, 0x7fa00001, 0xffc00001, 0x7f800000, 0xff800000, 0, 0x80000000, 1,
		0x807fffff, 0x00800000, 0x7f7fffff, 0x3f800000, 0xbf800000, 0x3f000000},
	tensor.Float64: {0x7ff8000000000000, 0x7ff4000000000001, 0xfff8000000000001, 0x7ff0000000000000,
		0xfff0000000000000, 0, 1 << 63, 1, 0x800fffffffffffff, 0x0010000000000000, 0x7fefffffffffffff,
		0x3ff0000000000000, 0xbff0000000000000, 0x3fe0000000000000},
	tensor.Bool: {0, 1, 2, 0x80, 0xff},
}

func operand(dt tensor.DType, count int, r *rand.Rand) []byte {
	size := dt.Size()
	width := uint(8 * size)
	sp := specials[dt]
	if dt.IsInteger() {
		sp = []uint64{0, 1, 2, math.MaxUint64, 1 << (width - 1), 1<<(width-1) - 1}
	}
	b := make([]byte, count*size)
	for i := range count {
		v := r.Uint64()
		switch r.IntN(6) {
		case 0, 1:
			v = sp[r.IntN(len(sp))]
		case 2:
			if dt.IsFloat() { // a subnormal, or zero: the exponent cleared
				exp := map[int]uint64{2: 0x7c00, 4: 0x7f800000, 8: 0x7ff0000000000000}[size]
				if dt == tensor.BFloat16 {
					exp = 0x7f80
				}
				v &^= exp
			}
		}
		e := b[i*size:]
		switch size {
		case 1:
			e[0] = byte(v)
		case 2:
			binary.NativeEndian.PutUint16(e, uint16(v))
		case 4:
			binary.NativeEndian.PutUint32(e, uint32(v))
		case 8:
			binary.NativeEndian.PutUint64(e, v)
		}
	}
	return b
}

// firstDifference returns the first element where got and want differ,
// or -1: bits must be equal, but for NaNs, whose payloads may differ.
func firstDifference(dt tensor.DType, got, want []byte) int {
	size := dt.Size()
	for i := 0; i < len(want); i += size {
		g, w := got[i:i+size], want[i:i+size]
		if bytes.Equal(g, w) || (isNaN(dt, g) && isNaN(dt, w)) {
			continue
		}
		return i / size
	}
	return -1
}

func isNaN(dt tensor.DType, e []byte) bool {
	switch dt {
	case tensor.Float16:
		return tensor.F16(binary.NativeEndian.Uint16(e)).IsNaN()
	case tensor.BFloat16:
		return tensor.BF16(binary.NativeEndian.Uint16(e)).IsNaN()
	case tensor.Float32:
		return math.IsNaN(float64(math.Float32frombits(binary.NativeEndian.Uint32(e))))
	case tensor.Float64:
		return math.IsNaN(math.Float64frombits(binary.NativeEndian.Uint64(e)))
	}
	return false
}

// reduceOps lists every op and dtype that reduce supports, PreMulSum
// with a factor.
func reduceOps() (ops []reduce.Op, dts []tensor.DType) {
	for _, dt := range tensor.DTypes() {
		for _, k := range reduce.Kinds() {
			op := reduce.New(k)
			if k == reduce.PreMulSum {
				op = reduce.PreMul(-0.3)
			}
			if op.Supports(dt) == nil {
				ops, dts = append(ops, op), append(dts, dt)
			}
		}
	}
	return ops, dts
}

// TestDeviceReduce runs every kernel on random operands and compares the
// results with package reduce: Combine for every op and dtype, in place
// too, then Finish for Avg and PreMulSum over several contribution counts
// and factors.
func TestDeviceReduce(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	n := need{t}
	s := n.stream(ctx.NewStream())
	const most = 100003
	counts := []int{0, 1, 7, 1000, most}
	dst, a, b := n.mem(ctx.Alloc(8*most+64)), n.mem(ctx.Alloc(8*most+64)), n.mem(ctx.Alloc(8*most+64))
	ops, dts := reduceOps()
	for i, op := range ops {
		dt := dts[i]
		size := dt.Size()
		// Offsets of one, two and three elements: the ranges need not
		// start their allocations.
		dOff, aOff, bOff := size, 2*size, 3*size
		for _, count := range counts {
			r := rand.New(rand.NewPCG(uint64(i), uint64(count)))
			x, y := operand(dt, count, r), operand(dt, count, r)
			ok(t, ctx.CopyHtoD(a, aOff, x))
			ok(t, ctx.CopyHtoD(b, bOff, y))
			ok(t, s.Combine(op, dt, dst, dOff, a, aOff, b, bOff, count))
			want := make([]byte, len(x))
			reduce.Combine(op, dt, want, x, y)
			got := make([]byte, len(x))
			ok(t, s.Synchronize())
			ok(t, ctx.CopyDtoH(got, dst, dOff))
			if j := firstDifference(dt, got, want); j >= 0 {
				t.Errorf("%v %v, %d elements: element %d of %x ⊕ %x is %x, want %x", op, dt, count, j,
					x[j*size:][:size], y[j*size:][:size], got[j*size:][:size], want[j*size:][:size])
				continue
			}
			if count == 7 { // in place: dst is a
				ok(t, s.Combine(op, dt, a, aOff, a, aOff, b, bOff, count))
				ok(t, s.Synchronize())
				ok(t, ctx.CopyDtoH(got, a, aOff))
				if j := firstDifference(dt, got, want); j >= 0 {
					t.Errorf("%v %v in place: element %d differs", op, dt, j)
				}
			}
			testFinish(t, ctx, s, op, dt, dst, dOff, want)
		}
	}
}

// testFinish finishes op on sum, the combination, at off of buf.
func testFinish(t *testing.T, ctx *Context, s *Stream, op reduce.Op, dt tensor.DType, buf *DeviceMemory,
	off int, sum []byte) {
	t.Helper()
	finishes := []reduce.Op{op}
	contributions := []int{1}
	switch op.Kind() {
	case reduce.Avg:
		finishes = []reduce.Op{op, op, op, op}
		contributions = []int{1, 2, 3, 200}
	case reduce.PreMulSum:
		for _, f := range []float64{0.5, -3.25, 1e-3, 3e38, 0, 1e-300} {
			finishes = append(finishes, reduce.PreMul(f))
		}
		contributions = slices.Repeat([]int{2}, len(finishes))
	}
	got, want := make([]byte, len(sum)), make([]byte, len(sum))
	for i, fin := range finishes {
		ok(t, ctx.CopyHtoD(buf, off, sum))
		ok(t, s.Finish(fin, dt, buf, off, len(sum)/dt.Size(), contributions[i]))
		copy(want, sum)
		reduce.Finish(fin, dt, want, contributions[i])
		ok(t, s.Synchronize())
		ok(t, ctx.CopyDtoH(got, buf, off))
		if j := firstDifference(dt, got, want); j >= 0 {
			size := dt.Size()
			t.Errorf("Finish %v %v over %d, %d elements: element %d of %x is %x, want %x", fin, dt,
				contributions[i], len(sum)/size, j, sum[j*size:][:size], got[j*size:][:size],
				want[j*size:][:size])
		}
	}
}

// TestDeviceReduceOrder checks that kernels run in their stream's order
// with asynchronous copies, and that a grid smaller than the elements
// covers them all.
func TestDeviceReduceOrder(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	n := need{t}
	s := n.stream(ctx.NewStream())
	count := maxBlocks*blockSize + 5
	dt := tensor.Float32
	bytesN := count * dt.Size()
	pin := n.host(ctx.AllocHost(3 * bytesN))
	h := pin.Bytes()
	x, y, out := h[:bytesN], h[bytesN:2*bytesN], h[2*bytesN:]
	r := rand.New(rand.NewPCG(1, 2))
	copy(x, operand(dt, count, r))
	copy(y, operand(dt, count, r))
	a, b := n.mem(ctx.Alloc(bytesN)), n.mem(ctx.Alloc(bytesN))
	op := reduce.PreMul(0.125)
	ok(t, s.CopyHtoD(a, 0, x))
	ok(t, s.CopyHtoD(b, 0, y))
	ok(t, s.Combine(op, dt, a, 0, a, 0, b, 0, count))
	ok(t, s.Finish(op, dt, a, 0, count, 2))
	ok(t, s.CopyDtoH(out, a, 0))
	want := make([]byte, bytesN)
	reduce.Combine(op, dt, want, x, y)
	reduce.Finish(op, dt, want, 2)
	ok(t, s.Synchronize())
	if j := firstDifference(dt, out, want); j >= 0 {
		t.Errorf("element %d of %d differs", j, count)
	}
}

// TestDeviceReduceMisuse checks that what the kernels must not be given
// fails with ErrInvalid or ErrClosed, before the kernels are even loaded.
func TestDeviceReduceMisuse(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	n := need{t}
	s := n.stream(ctx.NewStream())
	m := n.mem(ctx.Alloc(64))
	sum, f32 := reduce.New(reduce.Sum), tensor.Float32
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"bitwise float", s.Combine(reduce.New(reduce.BXor), f32, m, 0, m, 0, m, 0, 4)},
		{"premul_sum of integers", s.Combine(reduce.PreMul(2), tensor.Int32, m, 0, m, 0, m, 0, 4)},
		{"premul_sum without a factor", s.Combine(reduce.New(reduce.PreMulSum), f32, m, 0, m, 0, m, 0, 4)},
		{"avg of bool", s.Finish(reduce.New(reduce.Avg), tensor.Bool, m, 0, 4, 2)},
		{"zero op", s.Combine(reduce.Op{}, f32, m, 0, m, 0, m, 0, 4)},
		{"invalid dtype", s.Combine(sum, tensor.Invalid, m, 0, m, 0, m, 0, 4)},
		{"negative count", s.Combine(sum, f32, m, 0, m, 0, m, 0, -1)},
		{"huge count", s.Combine(sum, f32, m, 0, m, 0, m, 0, math.MaxInt/2)},
		{"past the end", s.Combine(sum, f32, m, 0, m, 0, m, 4, 16)},
		{"negative offset", s.Finish(sum, f32, m, -4, 1, 2)},
		{"misaligned", s.Combine(sum, f32, m, 0, m, 2, m, 0, 4)},
		{"partly overlapping", s.Combine(sum, f32, m, 0, m, 4, m, 0, 4)},
		{"nil memory", s.Combine(sum, f32, nil, 0, m, 0, m, 0, 4)},
		{"no contributions", s.Finish(reduce.New(reduce.Avg), f32, m, 0, 4, 0)},
		{"nil stream", (*Stream)(nil).Combine(sum, f32, m, 0, m, 0, m, 0, 4)},
	} {
		wantErr(t, tc.what, tc.err, ErrInvalid)
	}
	if ctx.kernels != nil || len(ctx.modules) != 0 {
		t.Error("misuse loaded the kernels")
	}
	if len(devs) > 1 {
		other := testContext(t, devs[1])
		o := n.mem(other.Alloc(64))
		wantErr(t, "memory of another context", s.Combine(sum, f32, m, 0, o, 0, m, 0, 4), ErrInvalid)
	}
	gone := n.mem(ctx.Alloc(64))
	ok(t, gone.Close())
	wantErr(t, "closed memory", s.Combine(sum, f32, m, 0, gone, 0, m, 0, 4), ErrClosed)
	// Distinct ranges of one allocation, and a and b overlapping, are fine;
	// so is nothing to do.
	ok(t, s.Combine(sum, f32, m, 0, m, 16, m, 20, 4))
	ok(t, s.Combine(sum, f32, m, 0, m, 0, m, 0, 0))
	ok(t, s.Finish(sum, f32, m, 0, 4, 3))
	ok(t, s.Finish(reduce.New(reduce.Avg), f32, m, 0, 4, 1))
	ok(t, s.Synchronize())
	if ctx.kernels == nil {
		t.Error("the kernels were not loaded for a valid Combine")
	}

	closing := n.ctx(devs[0].PrimaryContext())
	cs, cs2 := n.stream(closing.NewStream()), n.stream(closing.NewStream())
	cm := n.mem(closing.Alloc(64))
	ok(t, cs.Close())
	wantErr(t, "closed stream", cs.Combine(sum, f32, cm, 0, cm, 0, cm, 0, 4), ErrClosed)
	ok(t, closing.Close())
	wantErr(t, "closed context", cs2.Finish(reduce.New(reduce.Avg), f32, cm, 0, 4, 2), ErrClosed)
	wantErr(t, "memory of a closed context", s.Combine(sum, f32, cm, 0, m, 0, m, 0, 4), ErrInvalid)
}

// TestDeviceReduceConcurrent starts reductions on a fresh context from
// several goroutines at once: the kernels load once.
func TestDeviceReduceConcurrent(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	n := need{t}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		s := n.stream(ctx.NewStream())
		m := n.mem(ctx.Alloc(8 * 100))
		wg.Go(func() {
			if errs[i] = s.Combine(reduce.New(reduce.Max), tensor.Int64, m, 0, m, 0, m, 0, 100); errs[i] == nil {
				errs[i] = s.Synchronize()
			}
		})
	}
	wg.Wait()
	ok(t, errors.Join(errs...))
	if len(ctx.modules) != 1 {
		t.Errorf("%d modules loaded, want 1", len(ctx.modules))
	}
}

func TestDeviceModule(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	mod, err := ctx.LoadModule(reducePTX)
	ok(t, err)
	f, err := mod.Function("gc_sum_f32")
	ok(t, err)
	if f.Name() != "gc_sum_f32" {
		t.Errorf("Name() = %q", f.Name())
	}
	_, err = mod.Function("gc_no_such_kernel")
	wantErr(t, "an unknown function", err, ResultNotFound)
	_, err = ctx.LoadModule([]byte("not PTX"))
	var derr *Error
	if !errors.As(err, &derr) || (derr.Code != ResultInvalidImage && derr.Code != ResultInvalidPTX) {
		t.Errorf("LoadModule of text that is not PTX: %v; want the driver's CUDA_ERROR_INVALID_IMAGE or _PTX", err)
	}
	_, err = ctx.LoadModule(nil)
	wantErr(t, "LoadModule without PTX", err, ErrInvalid)
	ok(t, mod.Close())
	wantErr(t, "second Close", mod.Close(), ErrClosed)
	_, err = mod.Function("gc_sum_f32")
	wantErr(t, "Function of a closed module", err, ErrClosed)

	// A module left open is unloaded by the context's Close (TestFakeDriver
	// checks that nothing leaks), after which it is closed.
	other := need{t}.ctx(devs[0].PrimaryContext())
	left, err := other.LoadModule(reducePTX)
	ok(t, err)
	ok(t, other.Close())
	wantErr(t, "Close after the context's", left.Close(), ErrClosed)
}
