package reduce

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"maps"
	"math"
	"slices"
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
		key := rapid.SampledFrom(kernelKeys()).Draw(rt, "kernel")
		k, dt := key.k, key.dt
		n := rapid.IntRange(1, 300).Draw(rt, "elements") * dt.Size()
		skew := rapid.IntRange(0, 7).Draw(rt, "misalignment")
		alias := rapid.Bool().Draw(rt, "dst aliases a")
		buf := func() []byte { return make([]byte, n+skew)[skew:] }
		a, b := buf(), buf()
		for _, x := range [][]byte{a, b} {
			for i := 0; i < n; i += dt.Size() {
				bits := rapid.OneOf(rapid.Uint64(), rapid.SampledFrom(edgeBits(dt))).Draw(rt, "bits")
				switch dt.Size() {
				case 1:
					x[i] = byte(bits)
				case 2:
					binary.NativeEndian.PutUint16(x[i:], uint16(bits))
				case 4:
					binary.NativeEndian.PutUint32(x[i:], uint32(bits))
				default:
					binary.NativeEndian.PutUint64(x[i:], bits)
				}
			}
		}
		want := buf()
		combinePortable(k, dt, want, a, b)
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
			if !same(dt, got[i:], want[i:]) {
				rt.Fatalf("%v %v element %d: vector %x, portable %x", k, dt, i/dt.Size(), got[i:i+dt.Size()], want[i:i+dt.Size()])
			}
		}
	})
}

// kernelKeys lists the kinds and dtypes that have a kernel, in one order.
func kernelKeys() []kindDType {
	keys := slices.Collect(maps.Keys(kernels))
	slices.SortFunc(keys, func(a, b kindDType) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.dt, b.dt)) })
	return keys
}

// same compares two elements' bits, NaNs being any NaN: which operand's
// payload survives is the hardware's to choose.
func same(dt tensor.DType, x, y []byte) bool {
	switch dt {
	case tensor.BFloat16:
		u, v := tensor.BF16(binary.NativeEndian.Uint16(x)), tensor.BF16(binary.NativeEndian.Uint16(y))
		return u == v || u.IsNaN() && v.IsNaN()
	case tensor.Float16:
		u, v := tensor.F16(binary.NativeEndian.Uint16(x)), tensor.F16(binary.NativeEndian.Uint16(y))
		return u == v || u.IsNaN() && v.IsNaN()
	case tensor.Float32:
		u, v := binary.NativeEndian.Uint32(x), binary.NativeEndian.Uint32(y)
		return u == v || math.IsNaN(float64(math.Float32frombits(u))) && math.IsNaN(float64(math.Float32frombits(v)))
	case tensor.Float64:
		u, v := binary.NativeEndian.Uint64(x), binary.NativeEndian.Uint64(y)
		return u == v || math.IsNaN(math.Float64frombits(u)) && math.IsNaN(math.Float64frombits(v))
	}
	return bytes.Equal(x[:dt.Size()], y[:dt.Size()])
}

// TestVectorKernelsRoundHalfTiesToEven sums pairs whose float32 total lies
// exactly halfway between two half-precision values, the lower one odd or
// even, so that only ties-to-even gives the portable loops' answers.
func TestVectorKernelsRoundHalfTiesToEven(t *testing.T) {
	for _, tc := range []struct {
		dt         tensor.DType
		a, b, want uint16
	}{
		{tensor.BFloat16, 0x3f81, 0x3b80, 0x3f82}, // (1+2^-7) + 2^-8: up to even
		{tensor.BFloat16, 0x3f80, 0x3b80, 0x3f80}, // 1 + 2^-8: down to even
		{tensor.Float16, 0x3c01, 0x1000, 0x3c02},  // (1+2^-10) + 2^-11
		{tensor.Float16, 0x3c00, 0x1000, 0x3c00},  // 1 + 2^-11
	} {
		if tc.dt == tensor.Float16 && !hasF16C {
			continue
		}
		const n = 19 // two kernel steps and a tail
		a, b, dst := make([]byte, 2*n), make([]byte, 2*n), make([]byte, 2*n)
		for i := range n {
			binary.NativeEndian.PutUint16(a[2*i:], tc.a)
			binary.NativeEndian.PutUint16(b[2*i:], tc.b)
		}
		Combine(New(Sum), tc.dt, dst, a, b)
		for i := range n {
			if got := binary.NativeEndian.Uint16(dst[2*i:]); got != tc.want {
				t.Fatalf("%v element %d: %#x, want %#x", tc.dt, i, got, tc.want)
			}
		}
	}
}
