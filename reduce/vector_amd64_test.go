package reduce

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/tensor"
)

// TestVectorKernelsMatchThePortableLoops runs the vector kernels (every
// one of kernelSets) and the portable loops on the same random bits (NaNs,
// infinities, subnormals and signed zeros among them), at lengths that are
// no multiple of a vector, at unaligned addresses, and with dst aliasing
// an operand: every result must be the same bits, NaNs being any NaN where
// the kernel computes with floats (see same).
func TestVectorKernelsMatchThePortableLoops(t *testing.T) {
	checkKernels(t, false)
}

// TestVectorKernelsMatchWithoutNaNs is the same on bits with no NaNs,
// which a kernel may handle apart (the half types' min and max do: a
// block with no NaN only picks operands), and which the random bits of
// the test above rarely give a whole block of.
func TestVectorKernelsMatchWithoutNaNs(t *testing.T) {
	checkKernels(t, true)
}

// TestHalfMinMaxFindEveryNaN puts a single NaN at every place of a
// block, a vector and a tail, in either operand, among ordinary values:
// the half types' min and max kernels take the path that only picks
// operands where they find no NaN, so each place must be searched. The
// other operand there is a subnormal, whose widened mantissa the NaN
// merges with.
func TestHalfMinMaxFindEveryNaN(t *testing.T) {
	for _, tc := range []struct {
		dt  tensor.DType
		nan uint64
	}{{tensor.BFloat16, 0xff81}, {tensor.Float16, 0xfc01}} {
		for _, k := range []Kind{Min, Max} {
			if _, ok := kernels[kindDType{k, tc.dt}]; !ok || !hasAVX2 {
				continue
			}
			const n = 64 + 16 + 3
			for at := range n {
				for _, inB := range []bool{false, true} {
					a, b := make([]byte, 2*n), make([]byte, 2*n)
					for i := range n {
						storeBits(tc.dt, a, i, niceBits(tc.dt, int64(i%9-4)))
						storeBits(tc.dt, b, i, niceBits(tc.dt, int64(i%7-3)))
					}
					x, y := a, b
					if inB {
						x, y = b, a
					}
					storeBits(tc.dt, x, at, tc.nan)
					storeBits(tc.dt, y, at, 1)
					want, got := make([]byte, 2*n), make([]byte, 2*n)
					combinePortable(k, tc.dt, want, a, b)
					vectorized(k, tc.dt, got, a, b)
					for i := range n {
						if g, w := loadBits(tc.dt, got, i), loadBits(tc.dt, want, i); g != w {
							t.Fatalf("%v %v, a NaN at %d (in b: %v): element %d is %#04x, portable %#04x", k, tc.dt, at, inB, i, g, w)
						}
					}
				}
			}
		}
	}
}

// checkKernels runs checkKernel on every kernel of kernelSets, each its
// own rapid check, so that none goes undrawn.
func checkKernels(t *testing.T, noNaNs bool) {
	if !hasAVX2 {
		t.Skip("no vector kernels on this CPU")
	}
	for _, tk := range testedKernels() {
		t.Run(fmt.Sprintf("%s/%v/%v", tk.set, tk.key.k, tk.key.dt), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { checkKernel(rt, tk, noNaNs) })
		})
	}
}

// checkKernel draws operands for a kernel, NaNs turned into infinities if
// noNaNs, and compares the kernel's results with the portable loop's; the
// kernel must write nothing past dst (a masked tail could).
func checkKernel(rt *rapid.T, tk testedKernel, noNaNs bool) {
	k, dt := tk.key.k, tk.key.dt
	kern := tk.kernel()
	n := rapid.IntRange(1, 300).Draw(rt, "elements") * dt.Size()
	skew := rapid.IntRange(0, 7).Draw(rt, "misalignment")
	alias := rapid.Bool().Draw(rt, "dst aliases a")
	buf := func() []byte { return make([]byte, n+skew+64)[skew : skew+n] }
	a, b := buf(), buf()
	for _, x := range [][]byte{a, b} {
		for i := 0; i < n; i += dt.Size() {
			bits := rapid.OneOf(rapid.Uint64(), rapid.SampledFrom(edgeBits(dt))).Draw(rt, "bits")
			if noNaNs {
				bits = nanToInf(dt, bits)
			}
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
	past := got[n : n+64]
	for i := range past {
		past[i] = 0xa5
	}
	if alias {
		copy(got, a)
		kern.combine(k, dt, got, got, b)
	} else {
		kern.combine(k, dt, got, a, b)
	}
	for i := 0; i < n; i += dt.Size() {
		if !same(k, dt, got[i:], want[i:]) {
			rt.Fatalf("%v %v %v element %d: vector %x, portable %x", tk.set, k, dt, i/dt.Size(), got[i:i+dt.Size()], want[i:i+dt.Size()])
		}
	}
	if i := slices.IndexFunc(past, func(c byte) bool { return c != 0xa5 }); i >= 0 {
		rt.Fatalf("%v %v %v wrote byte %d past dst", tk.set, k, dt, i)
	}
}

// BenchmarkCombineKernels measures every kind and dtype that has a vector
// kernel, through Combine, through the AVX2 kernel where an AVX-512 one
// replaces it there, and through the portable loop, in cache and out of
// L1, as BenchmarkCombine does (dst = dst ⊕ x; SetBytes counts one
// operand).
func BenchmarkCombineKernels(b *testing.B) {
	if !hasAVX2 {
		b.Skip("no vector kernels on this CPU")
	}
	avx2, avx512 := kernelSets["AVX2"], kernelSets["AVX-512"]
	for _, key := range kernelKeys() {
		for _, size := range []int{64 << 10, 1 << 20} {
			op := New(key.k)
			b.Run(fmt.Sprintf("%v/%v/%dKiB/vector", key.dt, key.k, size>>10), func(b *testing.B) {
				dst, x := benchBuffers(key.dt, size)
				b.SetBytes(int64(size))
				for b.Loop() {
					Combine(op, key.dt, dst, dst, x)
				}
			})
			if _, ok := avx512[key]; ok {
				b.Run(fmt.Sprintf("%v/%v/%dKiB/avx2", key.dt, key.k, size>>10), func(b *testing.B) {
					dst, x := benchBuffers(key.dt, size)
					b.SetBytes(int64(size))
					for b.Loop() {
						avx2[key].combine(key.k, key.dt, dst, dst, x)
					}
				})
			}
			b.Run(fmt.Sprintf("%v/%v/%dKiB/portable", key.dt, key.k, size>>10), func(b *testing.B) {
				dst, x := benchBuffers(key.dt, size)
				b.SetBytes(int64(size))
				for b.Loop() {
					combinePortable(key.k, key.dt, dst, dst, x)
				}
			})
		}
	}
}

// nanToInf turns the bits of a NaN of dt into an infinity of its sign, and
// leaves every other value alone.
func nanToInf(dt tensor.DType, bits uint64) uint64 {
	var sign, inf uint64
	switch dt {
	case tensor.BFloat16:
		sign, inf = 0x8000, 0x7f80
	case tensor.Float16:
		sign, inf = 0x8000, 0x7c00
	case tensor.Float32:
		sign, inf = 1<<31, 0x7f800000
	case tensor.Float64:
		sign, inf = 1<<63, 0x7ff0000000000000
	default:
		return bits
	}
	if bits&(sign-1) > inf {
		return bits&sign | inf
	}
	return bits
}

// kernelKeys lists the kinds and dtypes that have a kernel, in one order.
func kernelKeys() []kindDType { return sortedKeys(kernels) }

func sortedKeys(m kernelSet) []kindDType {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b kindDType) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.dt, b.dt)) })
	return keys
}

// kernelSets are the sets of kernels that the CPU runs, by name: the AVX2
// ones, and the AVX-512 ones where it has those, so that the AVX2 kernels
// these replace in kernels stay tested there too.
var kernelSets = func() map[string]kernelSet {
	sets := map[string]kernelSet{}
	if hasAVX2 {
		sets["AVX2"] = avx2Kernels()
	}
	if hasAVX512 {
		sets["AVX-512"] = avx512Kernels()
	}
	return sets
}()

// testedKernel names a kernel of one of kernelSets.
type testedKernel struct {
	set string
	key kindDType
}

func (tk testedKernel) kernel() unitKernel { return kernelSets[tk.set][tk.key] }

// testedKernels lists every kernel of kernelSets, in one order.
func testedKernels() []testedKernel {
	var list []testedKernel
	for _, set := range slices.Sorted(maps.Keys(kernelSets)) {
		for _, key := range sortedKeys(kernelSets[set]) {
			list = append(list, testedKernel{set, key})
		}
	}
	return list
}

// same compares two elements' bits, NaNs being any NaN where the kernel
// computes with floats: which operand's payload survives is the hardware's
// to choose. Min and max of the half types select and merge the operands'
// bits as the portable loops do, so their NaNs must match too.
func same(k Kind, dt tensor.DType, x, y []byte) bool {
	if k == Min || k == Max {
		switch dt {
		case tensor.BFloat16, tensor.Float16:
			return bytes.Equal(x[:2], y[:2])
		}
	}
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
// even, so that only ties-to-even gives the portable loops' answers:
// through Combine and through every kernel of kernelSets.
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
		const n = 163 // an AVX-512 block, a vector and a tail; AVX2 steps and a tail
		a, b := make([]byte, 2*n), make([]byte, 2*n)
		for i := range n {
			binary.NativeEndian.PutUint16(a[2*i:], tc.a)
			binary.NativeEndian.PutUint16(b[2*i:], tc.b)
		}
		sums := map[string]func(dst []byte){"Combine": func(dst []byte) { Combine(New(Sum), tc.dt, dst, a, b) }}
		for set, m := range kernelSets {
			if kern, ok := m[kindDType{Sum, tc.dt}]; ok {
				sums[set] = func(dst []byte) { kern.combine(Sum, tc.dt, dst, a, b) }
			}
		}
		for name, sum := range sums {
			dst := make([]byte, 2*n)
			sum(dst)
			for i := range n {
				if got := binary.NativeEndian.Uint16(dst[2*i:]); got != tc.want {
					t.Fatalf("%v through %s, element %d: %#x, want %#x", tc.dt, name, i, got, tc.want)
				}
			}
		}
	}
}
