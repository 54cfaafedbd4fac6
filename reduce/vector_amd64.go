package reduce

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/gocomms/gocomms/tensor"
)

// hasAVX2 says the AVX2 kernels may run. The portable loops stay the
// reference: the kernels' results are the same bits (tests compare them).
var hasAVX2 = cpu.X86.HasAVX2

// vectorized combines float32 and float64 Sum and Product with AVX2 where
// the CPU has it, about four times the portable loop's rate on data in
// cache and memory's rate beyond, and reports whether it did. Vector and
// scalar instructions round alike, and neither flushes subnormals (Go
// leaves MXCSR at its default), so the results are the portable loop's.
func vectorized(k Kind, dt tensor.DType, dst, a, b []byte) bool {
	if !hasAVX2 || len(dst) == 0 {
		return false
	}
	var kernel func(dst, a, b unsafe.Pointer, n int)
	switch {
	case dt == tensor.Float32 && k == Sum:
		kernel = addF32
	case dt == tensor.Float32 && k == Product:
		kernel = mulF32
	case dt == tensor.Float64 && k == Sum:
		kernel = addF64
	case dt == tensor.Float64 && k == Product:
		kernel = mulF64
	default:
		return false
	}
	kernel(unsafe.Pointer(&dst[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), len(dst))
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
