package reduce

import (
	"fmt"
	"unsafe"

	"github.com/gocomms/gocomms/tensor"
)

// Combine computes dst[i] = a[i] ⊕ b[i] for every element, where ⊕ is op's
// combining function (Avg and PreMulSum combine as Sum; Finish completes
// them). The slices hold elements of dt in native byte order, have equal
// lengths that are a multiple of dt.Size(), and dst may alias a and/or b
// exactly (but not partially overlap them).
//
// Semantics per dtype family:
//   - integers wrap on overflow (two's complement), as in C and NCCL;
//   - float32/float64 use their own IEEE arithmetic;
//   - float16/bfloat16 convert both operands to float32, combine, and round
//     back to nearest even;
//   - Min/Max on floats return NaN if either operand is NaN, so a result
//     does not depend on the order contributions were combined in, and
//     order -0 below +0 (min(-0, +0) = -0, max(-0, +0) = +0) for the same
//     reason; this is Go's builtin min/max;
//   - bool treats any non-zero byte as true and writes 0 or 1: Sum and Max
//     are OR, Product and Min are AND, BXor is XOR.
//
// Combine panics if op.Supports(dt) fails or the lengths are inconsistent:
// callers validate their arguments once, up front, and a failure here is a
// broken invariant. It does not allocate.
//
// Buffers are reinterpreted in place as typed slices. They may be unaligned
// for dt (a byte slice at an odd offset); amd64 and arm64 load and store
// unaligned words correctly, and that is assumed.
func Combine(op Op, dt tensor.DType, dst, a, b []byte) {
	if err := op.Supports(dt); err != nil {
		panic(err)
	}
	if len(a) != len(dst) || len(b) != len(dst) || len(dst)%dt.Size() != 0 {
		panic(fmt.Sprintf("reduce: Combine with lengths %d, %d, %d for %v", len(dst), len(a), len(b), dt))
	}
	k := op.kind
	switch k {
	case Avg, PreMulSum:
		k = Sum
	case BAnd, BOr, BXor:
		if dt != tensor.Bool {
			bitwise(k, dst, a, b) // the same on every integer width
			return
		}
	}
	if !vectorized(k, dt, dst, a, b) {
		combinePortable(k, dt, dst, a, b)
	}
}

// combinePortable is Combine's portable loops, the reference the vector
// kernels match.
func combinePortable(k Kind, dt tensor.DType, dst, a, b []byte) {
	switch dt {
	case tensor.Bool:
		combineBool(k, dst, a, b)
	case tensor.Int8:
		combineNumbers(k, view[int8](dst), view[int8](a), view[int8](b))
	case tensor.Int16:
		combineNumbers(k, view[int16](dst), view[int16](a), view[int16](b))
	case tensor.Int32:
		combineNumbers(k, view[int32](dst), view[int32](a), view[int32](b))
	case tensor.Int64:
		combineNumbers(k, view[int64](dst), view[int64](a), view[int64](b))
	case tensor.Uint8:
		combineNumbers(k, view[uint8](dst), view[uint8](a), view[uint8](b))
	case tensor.Uint16:
		combineNumbers(k, view[uint16](dst), view[uint16](a), view[uint16](b))
	case tensor.Uint32:
		combineNumbers(k, view[uint32](dst), view[uint32](a), view[uint32](b))
	case tensor.Uint64:
		combineNumbers(k, view[uint64](dst), view[uint64](a), view[uint64](b))
	case tensor.Float16:
		combineF16(k, view[tensor.F16](dst), view[tensor.F16](a), view[tensor.F16](b))
	case tensor.BFloat16:
		combineBF16(k, view[tensor.BF16](dst), view[tensor.BF16](a), view[tensor.BF16](b))
	case tensor.Float32:
		combineNumbers(k, view[float32](dst), view[float32](a), view[float32](b))
	case tensor.Float64:
		combineNumbers(k, view[float64](dst), view[float64](a), view[float64](b))
	}
}

// view reinterprets b as a []T over the same memory, dropping any trailing
// partial element.
func view[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil // a *T over fewer bytes than a T would straddle its allocation
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
