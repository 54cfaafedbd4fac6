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

// vectorized combines the floating-point dtypes with AVX2 (and F16C for
// float16) where the CPU has them, and reports whether it did: Sum and
// Product of every floating dtype, Min and Max of float32 and float64.
// float32 and float64 run at about four times the portable loop's rate in
// cache and memory's rate beyond, the half types convert eight elements at
// a time. Vector and scalar instructions round alike, and neither flushes
// subnormals (Go leaves MXCSR at its default), so the results are the
// portable loops' bits.
func vectorized(k Kind, dt tensor.DType, dst, a, b []byte) bool {
	if !hasAVX2 || len(dst) == 0 {
		return false
	}
	switch {
	case k == Sum || k == Product:
		return arithmetic(k == Sum, k, dt, dst, a, b)
	case (k == Min || k == Max) && (dt == tensor.Float32 || dt == tensor.Float64):
		n := len(dst) &^ 31 // the kernel takes whole vectors
		if dt == tensor.Float32 {
			run(pick(k == Min, minF32, maxF32), dst, a, b, n)
			combineNumbers(k, view[float32](dst[n:]), view[float32](a[n:]), view[float32](b[n:]))
		} else {
			run(pick(k == Min, minF64, maxF64), dst, a, b, n)
			combineNumbers(k, view[float64](dst[n:]), view[float64](a[n:]), view[float64](b[n:]))
		}
		return true
	}
	return false
}

// arithmetic runs Sum (sum) or Product of dt, if a kernel does.
func arithmetic(sum bool, k Kind, dt tensor.DType, dst, a, b []byte) bool {
	switch dt {
	case tensor.Float32:
		run(pick(sum, addF32, mulF32), dst, a, b, len(dst))
	case tensor.Float64:
		run(pick(sum, addF64, mulF64), dst, a, b, len(dst))
	case tensor.BFloat16:
		n := len(dst) / 2 &^ 7 // the kernel takes eight elements at a time
		run(pick(sum, addBF16, mulBF16), dst, a, b, n)
		combineBF16(k, view[tensor.BF16](dst[2*n:]), view[tensor.BF16](a[2*n:]), view[tensor.BF16](b[2*n:]))
	case tensor.Float16:
		if !hasF16C {
			return false
		}
		n := len(dst) / 2 &^ 7
		run(pick(sum, addF16, mulF16), dst, a, b, n)
		combineF16(k, view[tensor.F16](dst[2*n:]), view[tensor.F16](a[2*n:]), view[tensor.F16](b[2*n:]))
	default:
		return false
	}
	return true
}

type kernel func(dst, a, b unsafe.Pointer, n int)

// pick returns first if which, else second.
func pick(which bool, first, second kernel) kernel {
	if which {
		return first
	}
	return second
}

// run calls k over dst, a and b, which have at least one byte: n counts
// bytes for float32 and float64, elements for the half types.
func run(k kernel, dst, a, b []byte, n int) {
	if n > 0 {
		k(unsafe.Pointer(&dst[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), n)
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
func addBF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func mulBF16(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF32(dst, a, b unsafe.Pointer, n int)

//go:noescape
func minF64(dst, a, b unsafe.Pointer, n int)

//go:noescape
func maxF64(dst, a, b unsafe.Pointer, n int)

func cpuid1ECX() uint32
