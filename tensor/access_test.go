package tensor

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// intRange gives the value range of each integer dtype as int64 bounds
// (uint64's upper bound is handled separately).
var intRange = map[DType][2]int64{
	Int8: {math.MinInt8, math.MaxInt8}, Int16: {math.MinInt16, math.MaxInt16},
	Int32: {math.MinInt32, math.MaxInt32}, Int64: {math.MinInt64, math.MaxInt64},
	Uint8: {0, math.MaxUint8}, Uint16: {0, math.MaxUint16}, Uint32: {0, math.MaxUint32},
	Uint64: {0, math.MaxInt64},
}

// wrap reduces v to dt's width the slow, obvious way.
func wrap(dt DType, v int64) int64 {
	bits := uint(dt.Size() * 8)
	if bits == 64 {
		return v
	}
	u := uint64(v) & (1<<bits - 1)
	if dt.IsSigned() && u >= 1<<(bits-1) {
		return int64(u) - 1<<bits
	}
	return int64(u)
}

func TestSetGetRoundTripInts(t *testing.T) {
	for dt, r := range intRange {
		x, _ := New(dt, 1)
		for _, v := range []int64{0, 1, -1, r[0], r[1], r[0] + 1, r[1] - 1, 100, -100} {
			x.SetInt64(0, v)
			if got := x.Int64At(0); got != wrap(dt, v) {
				t.Errorf("%v: SetInt64(%d) read back %d, want %d", dt, v, got, wrap(dt, v))
			}
			if v < r[0] || v > r[1] {
				continue
			}
			x.SetFloat64(0, float64(v))
			if got := x.Int64At(0); got != v && math.Abs(float64(v)) < 1<<53 {
				t.Errorf("%v: SetFloat64(%d) read back %d", dt, v, got)
			}
			if got := x.Float64At(0); got != float64(v) {
				t.Errorf("%v: Float64At after %d = %v", dt, v, got)
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		v := rapid.Int64().Draw(rt, "v")
		for dt := range intRange {
			x, _ := New(dt)
			x.SetInt64(0, v)
			if got := x.Int64At(0); got != wrap(dt, v) {
				rt.Fatalf("%v: SetInt64(%d) read back %d, want %d", dt, v, got, wrap(dt, v))
			}
		}
	})
}

func TestSetFloat64Ints(t *testing.T) {
	x, _ := New(Int8, 1)
	for _, c := range []struct {
		in   float64
		want int64
	}{
		{2.9, 2}, {-2.9, -2}, {-0.5, 0}, {127.99, 127}, {128, -128}, {-129, 127}, {300, 44},
		{math.NaN(), 0}, {math.Inf(1), -1}, {math.Inf(-1), 0}, {1e300, -1},
	} {
		x.SetFloat64(0, c.in)
		if got := x.Int64At(0); got != c.want {
			t.Errorf("int8 SetFloat64(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	u, _ := New(Uint64, 1)
	for _, c := range []struct {
		in   float64
		want uint64
	}{
		{0x1p63, 1 << 63}, {0x1.8p63, 3 << 62}, {1e30, math.MaxUint64}, {-1, math.MaxUint64}, {-1.5, math.MaxUint64}, {math.NaN(), 0},
	} {
		u.SetFloat64(0, c.in)
		if got := uint64(u.Int64At(0)); got != c.want {
			t.Errorf("uint64 SetFloat64(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	u.SetInt64(0, -1)
	if u.Float64At(0) != math.MaxUint64 {
		t.Errorf("uint64 max Float64At = %v", u.Float64At(0))
	}
}

func TestSetGetFloats(t *testing.T) {
	for _, dt := range []DType{Float16, BFloat16, Float32, Float64} {
		x, _ := New(dt, 1)
		for _, v := range []float64{0, 1, -1, 0.5, -2.25, 100, math.Inf(1), math.Inf(-1)} {
			x.SetFloat64(0, v)
			if got := x.Float64At(0); got != v {
				t.Errorf("%v: SetFloat64(%v) read back %v", dt, v, got)
			}
		}
		x.SetFloat64(0, math.NaN())
		if !math.IsNaN(x.Float64At(0)) || !HasNaN(x) || x.Int64At(0) != 0 {
			t.Errorf("%v: NaN lost", dt)
		}
		x.SetFloat64(0, math.Copysign(0, -1))
		if got := x.Float64At(0); got != 0 || !math.Signbit(got) {
			t.Errorf("%v: -0 read back %v", dt, got)
		}
		x.SetFloat64(0, -7.9)
		if got := x.Int64At(0); got != -7 {
			t.Errorf("%v: Int64At(-7.9) = %d", dt, got)
		}
		x.SetInt64(0, -300)
		if got := x.Float64At(0); got != -300 {
			t.Errorf("%v: SetInt64(-300) read back %v", dt, got)
		}
	}
	// The 16-bit formats round once, to nearest even.
	x, _ := New(Float16, 3)
	x.SetFloat64(0, 1+0x1p-11)         // tie → even (1)
	x.SetFloat64(1, 1+0x1p-11+0x1p-40) // just past the tie → up
	x.SetInt64(2, 70000)               // overflow → Inf
	want := []float64{1, 1 + 0x1p-10, math.Inf(1)}
	for i, w := range want {
		if got := x.Float64At(i); got != w {
			t.Errorf("float16 rounding [%d] = %v, want %v", i, got, w)
		}
	}
	b, _ := New(BFloat16, 2)
	b.SetInt64(0, 1<<24+1<<16+1) // just past a bfloat16 tie: must round up
	b.SetFloat64(1, 3.0)
	if got := b.Float64At(0); got != 1<<24+1<<17 {
		t.Errorf("bfloat16 SetInt64 = %v", got)
	}
	if b.Int64At(1) != 3 {
		t.Errorf("bfloat16 Int64At = %d", b.Int64At(1))
	}
	f, _ := New(Float32, 1)
	f.SetFloat64(0, 0.1)
	if f.Float64At(0) != float64(float32(0.1)) {
		t.Error("float32 rounding")
	}
	f.SetFloat64(0, 1e10)
	if f.Int64At(0) != 1e10 {
		t.Errorf("float32 Int64At(1e10) = %d", f.Int64At(0))
	}
	f.SetFloat64(0, 1e30)
	if f.Int64At(0) != math.MaxInt64 {
		t.Errorf("float32 Int64At(1e30) = %d, want saturation", f.Int64At(0))
	}
}

func TestBoolAccess(t *testing.T) {
	x, _ := New(Bool, 4)
	x.SetFloat64(0, 0.5)
	x.SetFloat64(1, 0)
	x.SetInt64(2, -4)
	x.SetInt64(3, 0)
	want := []int64{1, 0, 1, 0}
	for i, w := range want {
		if x.Int64At(i) != w || x.Float64At(i) != float64(w) {
			t.Errorf("bool[%d] = %d, want %d", i, x.Int64At(i), w)
		}
	}
	if HasNaN(x) {
		t.Error("HasNaN(bool)")
	}
	v, _ := As[bool](x)
	if !v[0] || v[1] || !v[2] || v[3] {
		t.Errorf("bool view = %v", v)
	}
}

func TestHasNaN(t *testing.T) {
	if HasNaN(FromSlice([]float32{1, 2})) || !HasNaN(FromSlice([]float32{1, float32(math.NaN())})) {
		t.Error("float32")
	}
	if HasNaN(FromSlice([]float64{math.Inf(1)})) || !HasNaN(FromSlice([]float64{math.NaN()})) {
		t.Error("float64")
	}
	if HasNaN(FromSlice([]F16{0x7c00, 0xfc00})) || !HasNaN(FromSlice([]F16{0, 0xfc01})) {
		t.Error("float16")
	}
	if HasNaN(FromSlice([]BF16{0x7f80})) || !HasNaN(FromSlice([]BF16{0x7fc0})) {
		t.Error("bfloat16")
	}
	if HasNaN(FromSlice([]uint16{0xffff})) {
		t.Error("uint16")
	}
}
