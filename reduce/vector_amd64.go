package reduce

import (
	"maps"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/gocomms/gocomms/tensor"
)

// hasAVX2 says the AVX2 kernels may run, and hasF16C the float16 ones
// (CPUID leaf 1, ECX bit 29, which x/sys/cpu does not report). The
// portable loops stay the reference: the kernels' results are the same
// bits (tests compare them).
var (
	hasAVX2 = cpu.X86.HasAVX2
	hasF16C = hasAVX2 && cpuid1ECX()&(1<<29) != 0
	// hasAVX512 says the AVX-512 kernels may run (BW for their masks, DQ
	// for VRANGE); x/sys/cpu reports these only where the OS saves the
	// mask and ZMM registers too.
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ
)

// kernel is dst[i] = a[i] op b[i] over n bytes, n a multiple of its unit.
type kernel func(dst, a, b unsafe.Pointer, n int)

// unitKernel is a kernel and the bytes it takes at least at a time: an
// element where it finishes with single elements or a masked vector (the
// AVX2 float32 and float64 sums and products, the AVX-512 kernels), eight
// elements of the AVX2 half types' sums and products, a whole vector for
// the others.
type unitKernel struct {
	run  kernel
	unit int
}

type kindDType struct {
	k  Kind
	dt tensor.DType
}

// kernels are the vector kernels by kind and dtype: the AVX2 ones, and
// over them the AVX-512 ones where the CPU has those.
var kernels = func() kernelSet {
	m := avx2Kernels()
	if hasAVX512 {
		maps.Copy(m, avx512Kernels())
	}
	return m
}()

// kernelSet maps a kind and dtype to its kernel.
type kernelSet map[kindDType]unitKernel

func (m kernelSet) add(k Kind, f kernel, unit int, dts ...tensor.DType) {
	for _, dt := range dts {
		m[kindDType{k, dt}] = unitKernel{f, unit}
	}
}

// avx2Kernels are Sum, Product, Min and Max of every numeric dtype. Where
// AVX2 has no instruction, a kernel composes it: 8-bit products from
// 16-bit ones, 64-bit products from 32-bit partial products, 64-bit min
// and max from a signed compare (the unsigned ones flip the top bits
// first) and a blend, and min and max of the half types from integer
// compares on their bits (float16's NaNs need F16C to come out as the
// portable loop's).
func avx2Kernels() kernelSet {
	m := kernelSet{}
	m.addArith(tensor.Float32, 4, addF32, mulF32, minF32, maxF32)
	m.addArith(tensor.Float64, 8, addF64, mulF64, minF64, maxF64)
	m.addArith(tensor.BFloat16, 16, addBF16, mulBF16, minBF16, maxBF16)
	if hasF16C {
		m.addArith(tensor.Float16, 16, addF16, mulF16, minF16, maxF16)
	}
	m.addArith(tensor.Int8, 32, addI8, mulI8, minS8, maxS8)
	m.addArith(tensor.Int16, 32, addI16, mulI16, minS16, maxS16)
	m.addArith(tensor.Int32, 32, addI32, mulI32, minS32, maxS32)
	m.addArith(tensor.Int64, 32, addI64, mulI64, minS64, maxS64)
	// Wrapping sums and products are the same bits signed or unsigned.
	m.addArith(tensor.Uint8, 32, addI8, mulI8, minU8, maxU8)
	m.addArith(tensor.Uint16, 32, addI16, mulI16, minU16, maxU16)
	m.addArith(tensor.Uint32, 32, addI32, mulI32, minU32, maxU32)
	m.addArith(tensor.Uint64, 32, addI64, mulI64, minU64, maxU64)
	return m
}

// addArith adds dt's Sum and Product kernels, which take unit bytes at
// least, and its Min and Max kernels, which take a whole vector.
func (m kernelSet) addArith(dt tensor.DType, unit int, sum, product, lo, hi kernel) {
	m.add(Sum, sum, unit, dt)
	m.add(Product, product, unit, dt)
	m.add(Min, lo, 32, dt)
	m.add(Max, hi, 32, dt)
}

// avx512Kernels are the AVX-512 kernels that measured faster than the
// AVX2 ones at 64 KiB and 1 MiB, on a Zen 4 that runs a 512-bit operation
// as two 256-bit halves: float32 and float64 min and max, where VRANGE
// does most of what AVX2 composes, and bfloat16 sums and products, which
// widen and round back 32 elements a vector without moving them across
// lanes. Those tried for the other sums and products and the integers'
// min and max were no faster at both sizes, where the AVX2 ones keep up
// with the caches (docs/PERFORMANCE.md).
func avx512Kernels() kernelSet {
	m := kernelSet{}
	m.add(Min, minF32Z, 4, tensor.Float32)
	m.add(Max, maxF32Z, 4, tensor.Float32)
	m.add(Min, minF64Z, 8, tensor.Float64)
	m.add(Max, maxF64Z, 8, tensor.Float64)
	m.add(Sum, addBF16Z, 2, tensor.BFloat16)
	m.add(Product, mulBF16Z, 2, tensor.BFloat16)
	return m
}

// vectorized combines with a vector kernel where the CPU and the kind and
// dtype have one, the portable loop finishing what is left over, and
// reports whether it did. float32 and float64 run at about four times the
// portable loop's rate in cache and at memory's rate beyond; the half
// types' sums and products convert eight elements at a time (bfloat16's
// 32 with AVX-512), and their min and max compare sixteen as integers. Vector and scalar instructions
// round alike, and neither flushes subnormals (Go leaves MXCSR at its
// default); integers wrap alike; min and max blend in Go's rules for NaN
// and signed zero: the results are the portable loops' bits.
func vectorized(k Kind, dt tensor.DType, dst, a, b []byte) bool {
	if !hasAVX2 {
		return false
	}
	kern, ok := kernels[kindDType{k, dt}]
	if ok {
		kern.combine(k, dt, dst, a, b)
	}
	return ok
}

// combine runs the kernel over the whole units of dst, and the portable
// loop over the rest.
func (kern unitKernel) combine(k Kind, dt tensor.DType, dst, a, b []byte) {
	n := len(dst) / kern.unit * kern.unit
	if n > 0 {
		kern.run(unsafe.Pointer(&dst[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), n)
	}
	if n < len(dst) {
		combinePortable(k, dt, dst[n:], a[n:], b[n:])
	}
}

//go:noescape
func addF32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulF32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addF64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulF64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addBF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulBF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minBF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxBF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addI8(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addI16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addI32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addI64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulI8(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulI16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulI32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulI64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minS8(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minS16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minS32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minS64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxS8(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxS16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxS32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxS64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minU8(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minU16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minU32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minU64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxU8(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxU16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxU32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxU64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF32Z(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF32Z(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF64Z(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF64Z(dst, a, b unsafe.Pointer, n int)

//go:noescape
func addBF16Z(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulBF16Z(dst, a, b unsafe.Pointer, n int)

func cpuid1ECX() uint32
