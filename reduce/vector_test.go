package reduce

import (
	"encoding/binary"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/tensor"
)

// TestVectorKernelsMatchThePortableLoops runs the vector kernels and the
// portable loops on the same random bits (NaNs, infinities, subnormals and
// signed zeros among them), at lengths that are no multiple of a vector,
// at unaligned addresses, and with dst aliasing an operand: every result
// must be the same bits, NaNs being any NaN.
func TestVectorKernelsMatchThePortableLoops(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no vector kernels on this CPU")
	}
	rapid.Check(t, func(rt *rapid.T) {
		dt := rapid.SampledFrom([]tensor.DType{tensor.Float32, tensor.Float64}).Draw(rt, "dtype")
		k := rapid.SampledFrom([]Kind{Sum, Product}).Draw(rt, "op")
		n := rapid.IntRange(1, 300).Draw(rt, "elements") * dt.Size()
		skew := rapid.IntRange(0, 7).Draw(rt, "misalignment")
		alias := rapid.Bool().Draw(rt, "dst aliases a")
		buf := func() []byte { return make([]byte, n+skew)[skew:] }
		a, b := buf(), buf()
		for _, x := range [][]byte{a, b} {
			for i := 0; i < n; i += dt.Size() {
				bits := rapid.OneOf(rapid.Uint64(), rapid.SampledFrom(edgeBits(dt))).Draw(rt, "bits")
				if dt == tensor.Float32 {
					binary.NativeEndian.PutUint32(x[i:], uint32(bits))
				} else {
					binary.NativeEndian.PutUint64(x[i:], bits)
				}
			}
		}
		want := buf()
		portable(k, dt, want, a, b)
		got := buf()
		if alias {
			copy(got, a)
			if !vectorized(k, dt, got, got, b) {
				rt.Fatal("the kernel declined")
			}
		} else if !vectorized(k, dt, got, a, b) {
			rt.Fatal("the kernel declined")
		}
		for i := 0; i < n; i += dt.Size() {
			if !sameFloat(dt, got[i:], want[i:]) {
				rt.Fatalf("%v %v element %d: vector %x, portable %x", k, dt, i/dt.Size(), got[i:i+dt.Size()], want[i:i+dt.Size()])
			}
		}
	})
}

// portable runs the portable loop of k on dt.
func portable(k Kind, dt tensor.DType, dst, a, b []byte) {
	if dt == tensor.Float32 {
		combineNumbers(k, view[float32](dst), view[float32](a), view[float32](b))
		return
	}
	combineNumbers(k, view[float64](dst), view[float64](a), view[float64](b))
}

func sameFloat(dt tensor.DType, x, y []byte) bool {
	if dt == tensor.Float32 {
		u, v := binary.NativeEndian.Uint32(x), binary.NativeEndian.Uint32(y)
		return u == v || math.IsNaN(float64(math.Float32frombits(u))) && math.IsNaN(float64(math.Float32frombits(v)))
	}
	u, v := binary.NativeEndian.Uint64(x), binary.NativeEndian.Uint64(y)
	return u == v || math.IsNaN(math.Float64frombits(u)) && math.IsNaN(math.Float64frombits(v))
}
