package reduce

import (
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
)

// kernel is dst[i] = a[i] op b[i] over n bytes, n a multiple of its unit.
type kernel func(dst, a, b unsafe.Pointer, n int)

// unitKernel is a kernel and the bytes it takes at least at a time: an
// element for float32 and float64, which finish with single elements,
// eight elements of the half types' sums and products, a whole vector for
// the others.
type unitKernel struct {
	run  kernel
	unit int
}

type kindDType struct {
	k  Kind
	dt tensor.DType
}

// kernels are the vector kernels by kind and dtype: Sum, Product, Min and
// Max of every numeric dtype. Where AVX2 has no instruction, a kernel
// composes it: 8-bit products from 16-bit ones, 64-bit products from
// 32-bit partial products, 64-bit min and max from a signed compare (the
// unsigned ones flip the top bits first) and a blend, and min and max of
// the half types from integer compares on their bits (float16's NaNs
// need F16C to come out as the portable loop's).
var kernels = func() map[kindDType]unitKernel {
	m := map[kindDType]unitKernel{}
	add := func(k Kind, f kernel, unit int, dts ...tensor.DType) {
		for _, dt := range dts {
			m[kindDType{k, dt}] = unitKernel{f, unit}
		}
	}
	add(Sum, addF32, 4, tensor.Float32)
	add(Product, mulF32, 4, tensor.Float32)
	add(Min, minF32, 32, tensor.Float32)
	add(Max, maxF32, 32, tensor.Float32)
	add(Sum, addF64, 8, tensor.Float64)
	add(Product, mulF64, 8, tensor.Float64)
	add(Min, minF64, 32, tensor.Float64)
	add(Max, maxF64, 32, tensor.Float64)
	add(Sum, addBF16, 16, tensor.BFloat16)
	add(Product, mulBF16, 16, tensor.BFloat16)
	add(Min, minBF16, 32, tensor.BFloat16)
	add(Max, maxBF16, 32, tensor.BFloat16)
	if hasF16C {
		add(Sum, addF16, 16, tensor.Float16)
		add(Product, mulF16, 16, tensor.Float16)
		add(Min, minF16, 32, tensor.Float16)
		add(Max, maxF16, 32, tensor.Float16)
	}
	add(Sum, addI8, 32, tensor.Int8, tensor.Uint8)
	add(Sum, addI16, 32, tensor.Int16, tensor.Uint16)
	add(Sum, addI32, 32, tensor.Int32, tensor.Uint32)
	add(Sum, addI64, 32, tensor.Int64, tensor.Uint64)
	add(Product, mulI8, 32, tensor.Int8, tensor.Uint8)
	add(Product, mulI16, 32, tensor.Int16, tensor.Uint16)
	add(Product, mulI32, 32, tensor.Int32, tensor.Uint32)
	add(Product, mulI64, 32, tensor.Int64, tensor.Uint64)
	add(Min, minS8, 32, tensor.Int8)
	add(Min, minS16, 32, tensor.Int16)
	add(Min, minS32, 32, tensor.Int32)
	add(Min, minS64, 32, tensor.Int64)
	add(Max, maxS8, 32, tensor.Int8)
	add(Max, maxS16, 32, tensor.Int16)
	add(Max, maxS32, 32, tensor.Int32)
	add(Max, maxS64, 32, tensor.Int64)
	add(Min, minU8, 32, tensor.Uint8)
	add(Min, minU16, 32, tensor.Uint16)
	add(Min, minU32, 32, tensor.Uint32)
	add(Min, minU64, 32, tensor.Uint64)
	add(Max, maxU8, 32, tensor.Uint8)
	add(Max, maxU16, 32, tensor.Uint16)
	add(Max, maxU32, 32, tensor.Uint32)
	add(Max, maxU64, 32, tensor.Uint64)
	return m
}()

// vectorized combines with a vector kernel where the CPU and the kind and
// dtype have one, the portable loop finishing what is left over, and
// reports whether it did. float32 and float64 run at about four times the
// portable loop's rate in cache and at memory's rate beyond; the half
// types' sums and products convert eight elements at a time, and their
// min and max compare sixteen as integers. Vector and scalar instructions
// round alike, and neither flushes subnormals (Go leaves MXCSR at its
// default); integers wrap alike; min and max blend in Go's rules for NaN
// and signed zero: the results are the portable loops' bits.
func vectorized(k Kind, dt tensor.DType, dst, a, b []byte) bool {
	if !hasAVX2 {
		return false
	}
	kern, ok := kernels[kindDType{k, dt}]
	if !ok {
		return false
	}
	n := len(dst) / kern.unit * kern.unit
	if n > 0 {
		kern.run(unsafe.Pointer(&dst[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), n)
	}
	if n < len(dst) {
		combinePortable(k, dt, dst[n:], a[n:], b[n:])
	}
	return true
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

func cpuid1ECX() uint32
