package reduce

import (
	"math"
	"slices"
	"testing"

	"github.com/gocomms/gocomms/tensor"
	"pgregory.net/rapid"
)

func TestFinishAvgIntsTruncate(t *testing.T) {
	s := []int32{-7, 7, -1, 1, math.MinInt32, math.MaxInt32, 0}
	Finish(New(Avg), tensor.Int32, tensor.FromSlice(s).Bytes(), 2)
	if want := []int32{-3, 3, 0, 0, math.MinInt32 / 2, math.MaxInt32 / 2, 0}; !slices.Equal(s, want) {
		t.Errorf("int32 avg/2 = %v, want %v", s, want)
	}
	// n larger than the element type can hold: every quotient truncates to 0.
	b := []int8{-128, 127, -1}
	Finish(New(Avg), tensor.Int8, tensor.FromSlice(b).Bytes(), 200)
	if !slices.Equal(b, []int8{0, 0, 0}) {
		t.Errorf("int8 avg/200 = %v", b)
	}
	u := []uint8{255, 200, 199}
	Finish(New(Avg), tensor.Uint8, tensor.FromSlice(u).Bytes(), 200)
	if !slices.Equal(u, []uint8{1, 1, 0}) {
		t.Errorf("uint8 avg/200 = %v", u)
	}
	w := []uint64{math.MaxUint64}
	Finish(New(Avg), tensor.Uint64, tensor.FromSlice(w).Bytes(), 3)
	if w[0] != math.MaxUint64/3 {
		t.Errorf("uint64 avg/3 = %d", w[0])
	}
}

func TestFinishFloats(t *testing.T) {
	f := []float32{1, -3, 0.5}
	Finish(New(Avg), tensor.Float32, tensor.FromSlice(f).Bytes(), 4)
	if !slices.Equal(f, []float32{0.25, -0.75, 0.125}) {
		t.Errorf("float32 avg/4 = %v", f)
	}
	d := []float64{1, -2}
	Finish(PreMul(0.5), tensor.Float64, tensor.FromSlice(d).Bytes(), 7) // n does not matter
	if !slices.Equal(d, []float64{0.5, -1}) {
		t.Errorf("float64 premul 0.5 = %v", d)
	}
	h := []tensor.BF16{tensor.BFloat16FromFloat32(3)}
	Finish(PreMul(2), tensor.BFloat16, tensor.FromSlice(h).Bytes(), 1)
	if h[0].Float32() != 6 {
		t.Errorf("bfloat16 premul 2 = %v", h[0].Float32())
	}
	g := []tensor.F16{tensor.Float16FromFloat32(1)}
	Finish(New(Avg), tensor.Float16, tensor.FromSlice(g).Bytes(), 3)
	if want := tensor.Float16FromFloat32(float32(1) / 3); g[0] != want {
		t.Errorf("float16 1/3 = %#04x, want %#04x", g[0], want)
	}
}

func TestFinishLeavesOtherOpsAlone(t *testing.T) {
	for _, k := range []Kind{Sum, Product, Min, Max, BAnd, BOr, BXor} {
		s := []int16{-5, 9}
		Finish(New(k), tensor.Int16, tensor.FromSlice(s).Bytes(), 4)
		if !slices.Equal(s, []int16{-5, 9}) {
			t.Errorf("Finish(%v) changed the buffer: %v", k, s)
		}
	}
	s := []float32{3}
	Finish(New(Avg), tensor.Float32, tensor.FromSlice(s).Bytes(), 1)
	if s[0] != 3 {
		t.Errorf("avg over 1 = %v", s[0])
	}
}

func TestFinishRapid(t *testing.T) {
	supported(func(op Op, dt tensor.DType) {
		t.Run(op.String()+"/"+dt.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				if op.Kind() == PreMulSum {
					factor := rapid.OneOf(
						rapid.SampledFrom([]float64{0, -1, 0.5, 1.0 / 3, 1e-3, 1e30, -2.5}),
						rapid.Float64Range(-10, 10),
					).Draw(rt, "factor")
					op = PreMul(factor)
				}
				n := rapid.OneOf(rapid.IntRange(1, 300), rapid.SampledFrom([]int{1, 2, 3, 1 << 20, 1 << 40})).Draw(rt, "n")
				k := rapid.IntRange(0, 30).Draw(rt, "len")
				vals := rapid.SliceOfN(elemGen(dt), k, k).Draw(rt, "vals")
				buf := fill(dt, vals)
				want := make([]byte, len(buf))
				for i, v := range vals {
					storeBits(dt, want, i, refFinishElem(op, dt, v, n))
				}
				Finish(op, dt, buf, n)
				checkSame(rt, "Finish "+op.String()+" "+dt.String(), dt, buf, want)
			})
		})
	})
}

func TestFinishPanics(t *testing.T) {
	b8 := make([]byte, 8)
	mustPanic(t, "n=0", "contributions", func() { Finish(New(Avg), tensor.Float32, b8, 0) })
	mustPanic(t, "partial element", "bytes", func() { Finish(New(Avg), tensor.Float32, b8[:5], 2) })
	mustPanic(t, "avg bool", "avg is not defined for bool", func() { Finish(New(Avg), tensor.Bool, b8, 2) })
	mustPanic(t, "premul int", "premul_sum is not defined for int32", func() { Finish(PreMul(2), tensor.Int32, b8, 2) })
}

func TestFinishNoAllocs(t *testing.T) {
	supported(func(op Op, dt tensor.DType) {
		buf := make([]byte, 64*dt.Size())
		if n := testing.AllocsPerRun(20, func() { Finish(op, dt, buf, 3) }); n != 0 {
			t.Errorf("Finish(%v, %v) allocates %v times", op, dt, n)
		}
	})
}
