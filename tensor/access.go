package tensor

import (
	"math"
	"slices"
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

// access is one dtype's accessors; accessors holds them by dtype, so that
// each exported accessor dispatches on the dtype in one place.
type access struct {
	float64At  func(t *Tensor, i int) float64
	int64At    func(t *Tensor, i int) int64
	setFloat64 func(t *Tensor, i int, v float64)
	setInt64   func(t *Tensor, i int, v int64)
	hasNaN     func(t *Tensor) bool
}

// scalar says how one element type T converts to and from float64 and
// int64; its access method does the indexing.
type scalar[T Element] struct {
	toFloat   func(T) float64
	toInt     func(T) int64
	fromFloat func(float64) T
	fromInt   func(int64) T
	hasNaN    func([]T) bool // nil where T has no NaN
}

func (s scalar[T]) access() access {
	return access{
		float64At:  func(t *Tensor, i int) float64 { return s.toFloat(*elem[T](t, i)) },
		int64At:    func(t *Tensor, i int) int64 { return s.toInt(*elem[T](t, i)) },
		setFloat64: func(t *Tensor, i int, v float64) { *elem[T](t, i) = s.fromFloat(v) },
		setInt64:   func(t *Tensor, i int, v int64) { *elem[T](t, i) = s.fromInt(v) },
		hasNaN: func(t *Tensor) bool {
			if s.hasNaN == nil {
				return false
			}
			v, _ := As[T](t)
			return s.hasNaN(v)
		},
	}
}

type integer interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64
}

// intScalar converts integers exactly (uint64 above MaxInt64 wraps to
// negative in int64) and wraps int64 to T's width (two's complement).
func intScalar[T integer](fromFloat func(float64) T) scalar[T] {
	return scalar[T]{
		toFloat:   func(v T) float64 { return float64(v) },
		toInt:     func(v T) int64 { return int64(v) },
		fromFloat: fromFloat,
		fromInt:   func(v int64) T { return T(v) },
	}
}

// wrapFloat truncates v to int64 and wraps it to T's width like SetInt64.
func wrapFloat[T integer](v float64) T { return T(floatToInt64(v)) }

// floatScalar is for float32 and float64, where Go's conversions already
// round to nearest even, once.
func floatScalar[T float32 | float64]() scalar[T] {
	return scalar[T]{
		toFloat:   func(v T) float64 { return float64(v) },
		toInt:     func(v T) int64 { return floatToInt64(float64(v)) },
		fromFloat: func(v float64) T { return T(v) },
		fromInt:   func(v int64) T { return T(v) },
		hasNaN:    floatNaN[T],
	}
}

// floatNaN reports whether v holds a NaN, comparing in the loop: a call
// per element would slow the NaN check of a large tensor several times.
func floatNaN[T float32 | float64](v []T) bool {
	for _, x := range v {
		if x != x {
			return true
		}
	}
	return false
}

type half interface {
	F16 | BF16
	Float64() float64
	IsNaN() bool
}

// halfScalar converts float64 and int64 through float32 rounded to odd, so
// that they round once to the 16-bit format.
func halfScalar[T half](fromFloat32 func(float32) T) scalar[T] {
	return scalar[T]{
		toFloat:   func(h T) float64 { return h.Float64() },
		toInt:     func(h T) int64 { return floatToInt64(h.Float64()) },
		fromFloat: func(v float64) T { return fromFloat32(float32RoundOdd(v)) },
		fromInt:   func(v int64) T { return fromFloat32(float32RoundOddInt(v)) },
		hasNaN:    func(v []T) bool { return slices.ContainsFunc(v, T.IsNaN) },
	}
}

// boolByte is 1 for true: the byte a Go bool true is stored as.
func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

var accessors = [numDTypes]access{
	// Bool reads its byte, so that any nonzero byte counts as true.
	Bool: scalar[uint8]{
		toFloat:   func(b uint8) float64 { return float64(min(b, 1)) },
		toInt:     func(b uint8) int64 { return int64(min(b, 1)) },
		fromFloat: func(v float64) uint8 { return boolByte(v != 0) },
		fromInt:   func(v int64) uint8 { return boolByte(v != 0) },
	}.access(),
	Int8:     intScalar(wrapFloat[int8]).access(),
	Int16:    intScalar(wrapFloat[int16]).access(),
	Int32:    intScalar(wrapFloat[int32]).access(),
	Int64:    intScalar(wrapFloat[int64]).access(),
	Uint8:    intScalar(wrapFloat[uint8]).access(),
	Uint16:   intScalar(wrapFloat[uint16]).access(),
	Uint32:   intScalar(wrapFloat[uint32]).access(),
	Uint64:   intScalar(floatToUint64).access(),
	Float16:  halfScalar(Float16FromFloat32).access(),
	BFloat16: halfScalar(BFloat16FromFloat32).access(),
	Float32:  floatScalar[float32]().access(),
	Float64:  floatScalar[float64]().access(),
}

// at checks i and returns t's accessors.
func (t *Tensor) at(i int) *access {
	t.checkIndex(i)
	return &accessors[t.dtype]
}

// Float64At returns element i as a float64 (bool is 0 or 1; int64 and
// uint64 values beyond 2^53 round to nearest).
func (t *Tensor) Float64At(i int) float64 { return t.at(i).float64At(t, i) }

// SetFloat64 stores v into element i, converting with the dtype's rounding:
// floats round to nearest even (once, even for float16/bfloat16); integers
// truncate toward zero and then wrap to the dtype's width like SetInt64,
// except that NaN stores 0 and values outside the int64 range (uint64: the
// uint64 range) saturate; bool stores v != 0.
func (t *Tensor) SetFloat64(i int, v float64) { t.at(i).setFloat64(t, i, v) }

// Int64At returns element i as an int64: floats truncate toward zero (NaN
// is 0, out-of-range values saturate), bool is 0 or 1 and uint64 values
// above MaxInt64 wrap to negative.
func (t *Tensor) Int64At(i int) int64 { return t.at(i).int64At(t, i) }

// SetInt64 stores v into element i: integers wrap to the dtype's width
// (two's complement), floats round to nearest even (once), bool stores
// v != 0.
func (t *Tensor) SetInt64(i int, v int64) { t.at(i).setInt64(t, i, v) }

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
	return accessors[t.dtype].hasNaN(t)
}
