package reduce

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/tensor"
	"pgregory.net/rapid"
)

// edgeBits lists interesting raw element values per dtype: zero, ±1, the
// extremes, NaN, ±Inf, signed zero, subnormals.
func edgeBits(dt tensor.DType) []uint64 {
	switch dt {
	case tensor.Bool:
		return []uint64{0, 1, 2, 0xff} // non-canonical trues too
	case tensor.Float16:
		return []uint64{0, 0x8000, 0x3c00, 0xbc00, 0x7e00, 0xfe00, 0x7c01, 0x7c00, 0xfc00, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x0400, 0x3800, 0x4200}
	case tensor.BFloat16:
		return []uint64{0, 0x8000, 0x3f80, 0xbf80, 0x7fc0, 0xffc0, 0x7f81, 0x7f80, 0xff80, 0x7f7f, 0xff7f, 0x0001, 0x8001, 0x0080, 0x3f00, 0x4040}
	case tensor.Float32, tensor.Float64:
		var out []uint64
		for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 3, math.NaN(), -math.NaN(), math.Inf(1), math.Inf(-1)} {
			out = append(out, encodeFloat(dt, v))
		}
		if dt == tensor.Float32 {
			return append(out, uint64(math.Float32bits(math.MaxFloat32)), uint64(math.Float32bits(-math.MaxFloat32)),
				1, 0x80000001, 0x00800000, 0x7f800001)
		}
		return append(out, math.Float64bits(math.MaxFloat64), math.Float64bits(-math.MaxFloat64),
			1, 0x8000000000000001, math.Float64bits(0x1p-1022), 0x7ff0000000000001)
	}
	mask := widthMask(dt)
	if dt.IsSigned() {
		return []uint64{0, 1, mask, mask >> 1, (mask >> 1) + 1, mask >> 1 & (mask - 1), (mask >> 1) + 2, 2, mask - 1}
	}
	return []uint64{0, 1, 2, mask, mask - 1, mask>>1 + 1, mask >> 1}
}

// niceBits turns a small integer into an element of dt, so that sums and
// products of ordinary values get exercised, not just random bit soup.
func niceBits(dt tensor.DType, v int64) uint64 {
	switch {
	case dt == tensor.Bool:
		return uint64(v & 1)
	case dt.IsFloat():
		return encodeFloat(dt, roundFloat(dt, float64(v)/4))
	}
	return uint64(v) & widthMask(dt)
}

// elemGen draws one element: an edge value, a small value, or random bits.
func elemGen(dt tensor.DType) *rapid.Generator[uint64] {
	mask := widthMask(dt)
	return rapid.OneOf(
		rapid.SampledFrom(edgeBits(dt)),
		rapid.Map(rapid.Int64Range(-40, 40), func(v int64) uint64 { return niceBits(dt, v) }),
		rapid.Map(rapid.Uint64(), func(v uint64) uint64 { return v & mask }),
	)
}

func randElem(r *rand.Rand, dt tensor.DType) uint64 {
	switch r.IntN(4) {
	case 0:
		e := edgeBits(dt)
		return e[r.IntN(len(e))]
	case 1:
		return r.Uint64() & widthMask(dt)
	}
	return niceBits(dt, r.Int64N(2001)-1000)
}

func fill(dt tensor.DType, vals []uint64) []byte {
	buf := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		storeBits(dt, buf, i, v)
	}
	return buf
}

func checkSame(t fataler, what string, dt tensor.DType, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range len(got) / dt.Size() {
		if g, w := loadBits(dt, got, i), loadBits(dt, want, i); !sameElem(dt, g, w) {
			t.Fatalf("%s: element %d = %#x, want %#x", what, i, g, w)
		}
	}
}

// fataler is what the checks need from *testing.T and *rapid.T alike.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkCombine runs Combine with a fresh dst and with every allowed
// aliasing, comparing each against the reference and checking that the
// inputs that are not dst stay untouched.
func checkCombine(t fataler, op Op, dt tensor.DType, a, b []byte) {
	t.Helper()
	want := refCombine(op.Kind(), dt, a, b)
	a0, b0 := slices.Clone(a), slices.Clone(b)

	dst := make([]byte, len(a))
	Combine(op, dt, dst, a, b)
	checkSame(t, op.String()+" "+dt.String()+" dst", dt, dst, want)
	if !bytes.Equal(a, a0) || !bytes.Equal(b, b0) {
		t.Fatalf("%v %v: inputs modified", op, dt)
	}

	x := slices.Clone(a)
	Combine(op, dt, x, x, b)
	checkSame(t, op.String()+" "+dt.String()+" dst==a", dt, x, want)

	y := slices.Clone(b)
	Combine(op, dt, y, a, y)
	checkSame(t, op.String()+" "+dt.String()+" dst==b", dt, y, want)

	z := slices.Clone(a)
	Combine(op, dt, z, z, z)
	checkSame(t, op.String()+" "+dt.String()+" dst==a==b", dt, z, refCombine(op.Kind(), dt, a, a))
}

// supported calls f for every (op, dtype) pair Supports accepts.
func supported(f func(op Op, dt tensor.DType)) {
	for _, op := range testOps() {
		for _, dt := range tensor.DTypes() {
			if op.Supports(dt) == nil {
				f(op, dt)
			}
		}
	}
}

func TestCombineLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	supported(func(op Op, dt tensor.DType) {
		for _, n := range []int{0, 1, 7, 1000} {
			av, bv := make([]uint64, n), make([]uint64, n)
			for i := range n {
				av[i], bv[i] = randElem(r, dt), randElem(r, dt)
			}
			checkCombine(t, op, dt, fill(dt, av), fill(dt, bv))
		}
	})
}

// TestCombineEdgePairs combines every edge value with every other.
func TestCombineEdgePairs(t *testing.T) {
	supported(func(op Op, dt tensor.DType) {
		e := edgeBits(dt)
		var av, bv []uint64
		for _, x := range e {
			for _, y := range e {
				av, bv = append(av, x), append(bv, y)
			}
		}
		checkCombine(t, op, dt, fill(dt, av), fill(dt, bv))
	})
}

func TestCombineRapid(t *testing.T) {
	supported(func(op Op, dt tensor.DType) {
		t.Run(op.String()+"/"+dt.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				n := rapid.IntRange(0, 40).Draw(rt, "n")
				g := elemGen(dt)
				av := rapid.SliceOfN(g, n, n).Draw(rt, "a")
				bv := rapid.SliceOfN(g, n, n).Draw(rt, "b")
				checkCombine(rt, op, dt, fill(dt, av), fill(dt, bv))
			})
		})
	})
}

// TestCombineHalfAccumulation pins the float32-accumulation rule with
// values where it matters.
func TestCombineHalfAccumulation(t *testing.T) {
	h := func(v float32) []byte { return tensor.FromSlice([]tensor.F16{tensor.Float16FromFloat32(v)}).Bytes() }
	dst := make([]byte, 2)
	// 2048 + 1 is a float16 tie (spacing 2 there): rounds to even, 2048.
	Combine(New(Sum), tensor.Float16, dst, h(2048), h(1))
	if got := tensor.FromSlice(view[tensor.F16](dst)).Float64At(0); got != 2048 {
		t.Errorf("2048+1 = %v, want 2048", got)
	}
	Combine(New(Sum), tensor.Float16, dst, h(2048), h(3))
	if got := tensor.FromSlice(view[tensor.F16](dst)).Float64At(0); got != 2052 {
		t.Errorf("2048+3 = %v, want 2052", got)
	}
	Combine(New(Product), tensor.Float16, dst, h(300), h(300))
	if got := tensor.FromSlice(view[tensor.F16](dst)).Float64At(0); !math.IsInf(got, 1) {
		t.Errorf("300*300 = %v, want +Inf", got)
	}
}

func TestCombineMinMaxSpecials(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	for _, c := range []struct {
		op         Kind
		a, b, want float64
	}{
		{Min, nan, 1, nan}, {Min, 1, nan, nan}, {Max, nan, 1, nan}, {Max, 1, nan, nan},
		{Min, negZero, 0, negZero}, {Min, 0, negZero, negZero},
		{Max, negZero, 0, 0}, {Max, 0, negZero, 0},
		{Min, math.Inf(-1), 5, math.Inf(-1)}, {Max, math.Inf(1), 5, math.Inf(1)},
	} {
		a, b := []float64{c.a}, []float64{c.b}
		dst := make([]float64, 1)
		Combine(New(c.op), tensor.Float64, tensor.FromSlice(dst).Bytes(), tensor.FromSlice(a).Bytes(), tensor.FromSlice(b).Bytes())
		if got := dst[0]; !(got == c.want && math.Signbit(got) == math.Signbit(c.want)) && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%v(%v, %v) = %v, want %v", c.op, c.a, c.b, got, c.want)
		}
	}
}

func TestCombineIntWrap(t *testing.T) {
	a, b := []int8{127, -128, 100, -7}, []int8{1, -1, 3, 2}
	dst := make([]int8, 4)
	Combine(New(Sum), tensor.Int8, tensor.FromSlice(dst).Bytes(), tensor.FromSlice(a).Bytes(), tensor.FromSlice(b).Bytes())
	if !slices.Equal(dst, []int8{-128, 127, 103, -5}) {
		t.Errorf("int8 sum = %v", dst)
	}
	Combine(New(Product), tensor.Int8, tensor.FromSlice(dst).Bytes(), tensor.FromSlice(a).Bytes(), tensor.FromSlice(b).Bytes())
	if !slices.Equal(dst, []int8{127, -128, 44, -14}) {
		t.Errorf("int8 product = %v", dst)
	}
	u := []uint32{math.MaxUint32}
	Combine(New(Sum), tensor.Uint32, tensor.FromSlice(u).Bytes(), tensor.FromSlice(u).Bytes(), tensor.FromSlice([]uint32{2}).Bytes())
	if u[0] != 1 {
		t.Errorf("uint32 wrap = %d", u[0])
	}
}

// TestCombineUnaligned runs every kernel on buffers at odd offsets.
func TestCombineUnaligned(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	supported(func(op Op, dt tensor.DType) {
		const n = 13
		av, bv := make([]uint64, n), make([]uint64, n)
		for i := range n {
			av[i], bv[i] = randElem(r, dt), randElem(r, dt)
		}
		a, b := fill(dt, av), fill(dt, bv)
		mem := make([]byte, 3*len(a)+3)
		ua, ub, ud := mem[1:1+len(a)], mem[2+len(a):2+2*len(a)], mem[3+2*len(a):]
		copy(ua, a)
		copy(ub, b)
		Combine(op, dt, ud, ua, ub)
		checkSame(t, "unaligned "+op.String()+" "+dt.String(), dt, ud, refCombine(op.Kind(), dt, a, b))
	})
}

func mustPanic(t *testing.T, what, contains string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", what)
			return
		}
		msg := ""
		switch v := r.(type) {
		case error:
			msg = v.Error()
		case string:
			msg = v
		}
		if !strings.Contains(msg, contains) {
			t.Errorf("%s: panic %q, want it to mention %q", what, msg, contains)
		}
	}()
	f()
}

func TestCombinePanics(t *testing.T) {
	b8 := make([]byte, 8)
	mustPanic(t, "band float32", "band is not defined for float32", func() { Combine(New(BAnd), tensor.Float32, b8, b8, b8) })
	mustPanic(t, "invalid op", "invalid op", func() { Combine(Op{}, tensor.Float32, b8, b8, b8) })
	mustPanic(t, "invalid dtype", "invalid dtype", func() { Combine(New(Sum), tensor.Invalid, b8, b8, b8) })
	mustPanic(t, "short a", "lengths", func() { Combine(New(Sum), tensor.Float32, b8, b8[:4], b8) })
	mustPanic(t, "short b", "lengths", func() { Combine(New(Sum), tensor.Float32, b8, b8, b8[:4]) })
	mustPanic(t, "partial element", "lengths", func() { Combine(New(Sum), tensor.Float32, b8[:6], b8[:6], b8[:6]) })
}

func TestCombineNoAllocs(t *testing.T) {
	supported(func(op Op, dt tensor.DType) {
		a, b, dst := make([]byte, 64*dt.Size()), make([]byte, 64*dt.Size()), make([]byte, 64*dt.Size())
		if n := testing.AllocsPerRun(20, func() { Combine(op, dt, dst, a, b) }); n != 0 {
			t.Errorf("Combine(%v, %v) allocates %v times", op, dt, n)
		}
	})
}
