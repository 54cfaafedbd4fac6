package reduce

import (
	"fmt"

	"github.com/gocomms/gocomms/tensor"
)

// Finish turns a buffer that holds the combination of all n contributions
// into op's result, in place:
//   - Avg divides each element by n: integers truncate toward zero (-7/2 is
//     -3), float32/float64 divide in their own precision, float16/bfloat16
//     divide in float32 and round back to nearest even;
//   - PreMulSum multiplies each element by the factor, rounded to the
//     element's precision (float32 for float32, float16 and bfloat16);
//   - every other op leaves buf unchanged.
//
// Like Combine, it panics on a broken invariant: op.Supports(dt) failing, a
// length that is not a multiple of dt.Size(), or n < 1. It does not
// allocate.
func Finish(op Op, dt tensor.DType, buf []byte, n int) {
	if err := op.Supports(dt); err != nil {
		panic(err)
	}
	if len(buf)%dt.Size() != 0 || n < 1 {
		panic(fmt.Sprintf("reduce: Finish with %d bytes of %v over %d contributions", len(buf), dt, n))
	}
	switch op.kind {
	case Avg:
		if n > 1 {
			average(dt, buf, n)
		}
	case PreMulSum:
		scale(dt, buf, op.factor)
	}
}

func average(dt tensor.DType, buf []byte, n int) {
	switch dt {
	case tensor.Int8:
		divSigned(view[int8](buf), n)
	case tensor.Int16:
		divSigned(view[int16](buf), n)
	case tensor.Int32:
		divSigned(view[int32](buf), n)
	case tensor.Int64:
		divSigned(view[int64](buf), n)
	case tensor.Uint8:
		divUnsigned(view[uint8](buf), n)
	case tensor.Uint16:
		divUnsigned(view[uint16](buf), n)
	case tensor.Uint32:
		divUnsigned(view[uint32](buf), n)
	case tensor.Uint64:
		divUnsigned(view[uint64](buf), n)
	case tensor.Float16:
		s, d := view[tensor.F16](buf), float32(n)
		for i := range s {
			f := s[i].Float32() / d
			h, ok := tensor.Float16FromFloat32Fast(f)
			if !ok {
				h = tensor.Float16FromFloat32(f)
			}
			s[i] = h
		}
	case tensor.BFloat16:
		s, d := view[tensor.BF16](buf), float32(n)
		for i := range s {
			s[i] = tensor.BFloat16FromFloat32(s[i].Float32() / d)
		}
	case tensor.Float32:
		s, d := view[float32](buf), float32(n)
		for i := range s {
			s[i] /= d
		}
	case tensor.Float64:
		s, d := view[float64](buf), float64(n)
		for i := range s {
			s[i] /= d
		}
	}
}

// divSigned divides in int64 so that n never has to fit in T (an int8 sum
// averaged over 200 ranks is simply 0); Go's division truncates toward
// zero.
func divSigned[T ~int8 | ~int16 | ~int32 | ~int64](s []T, n int) {
	d := int64(n)
	for i := range s {
		s[i] = T(int64(s[i]) / d)
	}
}

func divUnsigned[T ~uint8 | ~uint16 | ~uint32 | ~uint64](s []T, n int) {
	d := uint64(n)
	for i := range s {
		s[i] = T(uint64(s[i]) / d)
	}
}

func scale(dt tensor.DType, buf []byte, factor float64) {
	switch dt {
	case tensor.Float16:
		s, c := view[tensor.F16](buf), float32(factor)
		for i := range s {
			f := s[i].Float32() * c
			h, ok := tensor.Float16FromFloat32Fast(f)
			if !ok {
				h = tensor.Float16FromFloat32(f)
			}
			s[i] = h
		}
	case tensor.BFloat16:
		s, f := view[tensor.BF16](buf), float32(factor)
		for i := range s {
			s[i] = tensor.BFloat16FromFloat32(s[i].Float32() * f)
		}
	case tensor.Float32:
		s, f := view[float32](buf), float32(factor)
		for i := range s {
			s[i] *= f
		}
	case tensor.Float64:
		s := view[float64](buf)
		for i := range s {
			s[i] *= factor
		}
	}
}
