package tensor

import (
	"math"
	"unsafe"
)

// The accessors below convert one element at a time through float64 or
// int64. They are for tests, reference implementations and demos, not hot
// loops. An index outside [0, Numel()) panics, as indexing a slice does; so
// does any index on a tensor without host memory.

// elem returns a pointer to element i, panicking like a slice index when
// i is out of range.
func elem[T any](t *Tensor, i int) *T {
	var z T
	size := int(unsafe.Sizeof(z))
	b := t.data[i*size : i*size+size] // bounds check (and nil check) happen here
	return (*T)(unsafe.Pointer(unsafe.SliceData(b)))
}

func (t *Tensor) checkIndex(i int) {
	if i < 0 || i >= t.numel {
		panic("tensor: element index out of range")
	}
}

// Float64At returns element i as a float64 (bool is 0 or 1; int64 and
// uint64 values beyond 2^53 round to nearest).
func (t *Tensor) Float64At(i int) float64 {
	t.checkIndex(i)
	switch t.dtype {
	case Bool:
		if *elem[uint8](t, i) != 0 {
			return 1
		}
		return 0
	case Int8:
		return float64(*elem[int8](t, i))
	case Int16:
		return float64(*elem[int16](t, i))
	case Int32:
		return float64(*elem[int32](t, i))
	case Int64:
		return float64(*elem[int64](t, i))
	case Uint8:
		return float64(*elem[uint8](t, i))
	case Uint16:
		return float64(*elem[uint16](t, i))
	case Uint32:
		return float64(*elem[uint32](t, i))
	case Uint64:
		return float64(*elem[uint64](t, i))
	case Float16:
		return elem[F16](t, i).Float64()
	case BFloat16:
		return elem[BF16](t, i).Float64()
	case Float32:
		return float64(*elem[float32](t, i))
	case Float64:
		return *elem[float64](t, i)
	}
	panic("tensor: invalid dtype") // unreachable: tensors are built with valid dtypes
}

// SetFloat64 stores v into element i, converting with the dtype's rounding:
// floats round to nearest even (once, even for float16/bfloat16); integers
// truncate toward zero and then wrap to the dtype's width like SetInt64,
// except that NaN stores 0 and values outside the int64 range (uint64: the
// uint64 range) saturate; bool stores v != 0.
func (t *Tensor) SetFloat64(i int, v float64) {
	t.checkIndex(i)
	switch t.dtype {
	case Bool:
		*elem[bool](t, i) = v != 0
	case Float16:
		*elem[F16](t, i) = Float16FromFloat64(v)
	case BFloat16:
		*elem[BF16](t, i) = BFloat16FromFloat64(v)
	case Float32:
		*elem[float32](t, i) = float32(v)
	case Float64:
		*elem[float64](t, i) = v
	case Uint64:
		*elem[uint64](t, i) = floatToUint64(v)
	default:
		t.setIntBits(i, uint64(floatToInt64(v)))
	}
}

// Int64At returns element i as an int64: floats truncate toward zero (NaN
// is 0, out-of-range values saturate), bool is 0 or 1 and uint64 values
// above MaxInt64 wrap to negative.
func (t *Tensor) Int64At(i int) int64 {
	t.checkIndex(i)
	switch t.dtype {
	case Bool:
		if *elem[uint8](t, i) != 0 {
			return 1
		}
		return 0
	case Int8:
		return int64(*elem[int8](t, i))
	case Int16:
		return int64(*elem[int16](t, i))
	case Int32:
		return int64(*elem[int32](t, i))
	case Int64:
		return *elem[int64](t, i)
	case Uint8:
		return int64(*elem[uint8](t, i))
	case Uint16:
		return int64(*elem[uint16](t, i))
	case Uint32:
		return int64(*elem[uint32](t, i))
	case Uint64:
		return int64(*elem[uint64](t, i))
	}
	return floatToInt64(t.Float64At(i))
}

// SetInt64 stores v into element i: integers wrap to the dtype's width
// (two's complement), floats round to nearest even (once), bool stores
// v != 0.
func (t *Tensor) SetInt64(i int, v int64) {
	t.checkIndex(i)
	switch t.dtype {
	case Bool:
		*elem[bool](t, i) = v != 0
	case Float16:
		*elem[F16](t, i) = Float16FromFloat32(float32RoundOddInt(v))
	case BFloat16:
		*elem[BF16](t, i) = BFloat16FromFloat32(float32RoundOddInt(v))
	case Float32:
		*elem[float32](t, i) = float32(v) // Go rounds integer→float once, to nearest even
	case Float64:
		*elem[float64](t, i) = float64(v)
	default:
		t.setIntBits(i, uint64(v))
	}
}

// setIntBits stores the low bits of u into integer element i.
func (t *Tensor) setIntBits(i int, u uint64) {
	switch t.dtype.Size() {
	case 1:
		*elem[uint8](t, i) = uint8(u)
	case 2:
		*elem[uint16](t, i) = uint16(u)
	case 4:
		*elem[uint32](t, i) = uint32(u)
	case 8:
		*elem[uint64](t, i) = u
	}
}

// floatToInt64 truncates toward zero, mapping NaN to 0 and saturating
// outside the int64 range, so results do not depend on the platform.
func floatToInt64(v float64) int64 {
	switch {
	case v != v:
		return 0
	case v >= 0x1p63:
		return math.MaxInt64
	case v < -0x1p63:
		return math.MinInt64
	}
	return int64(v)
}

// floatToUint64 is floatToInt64 for uint64 targets: values in [2^63, 2^64)
// convert exactly, larger ones saturate, and negative ones wrap through
// int64 like SetInt64 would.
func floatToUint64(v float64) uint64 {
	switch {
	case v >= 0x1p64:
		return math.MaxUint64
	case v >= 0x1p63:
		return uint64(v)
	}
	return uint64(floatToInt64(v))
}

// HasNaN reports whether any element of a floating-point tensor is NaN. It
// is false for other dtypes, nil and tensors without host memory.
func HasNaN(t *Tensor) bool {
	if t == nil || t.data == nil {
		return false
	}
	switch t.dtype {
	case Float16:
		s, _ := As[F16](t)
		for _, v := range s {
			if v.IsNaN() {
				return true
			}
		}
	case BFloat16:
		s, _ := As[BF16](t)
		for _, v := range s {
			if v.IsNaN() {
				return true
			}
		}
	case Float32:
		s, _ := As[float32](t)
		for _, v := range s {
			if v != v {
				return true
			}
		}
	case Float64:
		s, _ := As[float64](t)
		for _, v := range s {
			if v != v {
				return true
			}
		}
	}
	return false
}
