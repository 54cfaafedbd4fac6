package tensor

import (
	"math"
	"math/bits"
)

// F16 holds the bits of an IEEE 754 binary16 value (dtype Float16): 1 sign
// bit, 5 exponent bits, 10 mantissa bits. It is not called Float16 because
// that name is the DType constant.
type F16 uint16

// BF16 holds the bits of a bfloat16 value (dtype BFloat16): the top half of
// a float32 (1 sign, 8 exponent, 7 mantissa bits).
type BF16 uint16

// Float16FromFloat32 rounds f to the nearest float16, ties to even.
// Values too large become ±Inf, values too small become ±0 (keeping the
// sign), subnormals are produced where exact rounding calls for them, and
// NaNs stay NaN: the result is quiet and keeps the top payload bits.
func Float16FromFloat32(f float32) F16 {
	if h, ok := Float16FromFloat32Fast(f); ok {
		return h
	}
	return float16FromBits(math.Float32bits(f))
}

// Float16FromFloat32Fast is the common case of Float16FromFloat32, small
// enough for the compiler to inline into reduction loops (a function that
// also calls out for the rare cases is not). For ±0 and for
// 2^-14 <= |f| < 2^16 (a normal float16 result, or ±Inf by rounding up) it
// returns the correctly rounded value and true; otherwise it returns false
// and the caller must use Float16FromFloat32.
func Float16FromFloat32Fast(f float32) (F16, bool) {
	b := math.Float32bits(f)
	a := b & 0x7fffffff
	if a-0x38800000 >= 0x47800000-0x38800000 { // unsigned: also catches a < 2^-14
		return F16(b >> 16), a == 0 // ±0 keeps its sign
	}
	// Rebias the exponent (127 → 15) and round to nearest even by adding
	// 0xfff plus the lowest kept bit; a carry into the exponent, even up to
	// Inf, is correct rounding.
	return F16(uint16(b>>16)&0x8000 | uint16((a-0x38000000+0xfff+(a>>13)&1)>>13)), true
}

// float16FromBits is the general conversion. Float16FromFloat32 only
// reaches it for subnormal results, |f| >= 2^16, Inf and NaN, but it
// handles every input (the tests check it on its own).
func float16FromBits(b uint32) F16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff

	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return F16(sign | 0x7e00 | uint16(mant>>13))
		}
		return F16(sign | 0x7c00)
	}
	e := exp - 127 + 15 // rebias
	if e >= 0x1f {
		return F16(sign | 0x7c00)
	}
	if e <= 0 {
		// Subnormal result (or zero): m·2^-24, where m is the 24-bit
		// significand shifted right by 14-e, rounded to nearest even.
		if e < -10 {
			// Below half the smallest subnormal (2^-25): rounds to ±0.
			return F16(sign)
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 != 0) {
			h++ // may carry into the exponent: that is the right encoding
		}
		return F16(sign | uint16(h))
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 != 0) {
		h++ // a carry into the exponent (even to Inf) is correct rounding
	}
	return F16(sign | uint16(h))
}

// Float32 returns h as a float32; the conversion is exact. It is written
// to stay inlinable, since every float16 reduction step calls it twice.
func (h F16) Float32() float32 {
	// Move exponent and mantissa into float32 position and rebias 15 → 127.
	bits := uint32(h&0x7fff)<<13 + (127-15)<<23
	if h&0x7c00-0x400 >= 0x7800 { // one unsigned test for both rare cases
		if h&0x7c00 != 0 { // Inf or NaN (payload kept): exponent all ones
			bits += (128 - 16) << 23
		} else { // zero or subnormal: build 2^-14·(1+m/1024), subtract 2^-14 (exact)
			bits = math.Float32bits(math.Float32frombits(bits+1<<23) - 0x1p-14)
		}
	}
	return math.Float32frombits(bits | uint32(h&0x8000)<<16)
}

// Float64 returns h as a float64; the conversion is exact.
func (h F16) Float64() float64 { return float64(h.Float32()) }

// IsNaN reports whether h is a NaN.
func (h F16) IsNaN() bool { return h&0x7fff > 0x7c00 }

// BFloat16FromFloat32 rounds f to the nearest bfloat16, ties to even. NaNs
// stay NaN (made quiet, so truncation cannot turn them into Inf).
func BFloat16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BF16(b>>16 | 0x40)
	}
	// Adding 0x7fff plus the lsb of the kept half rounds to nearest even;
	// a carry out of the mantissa bumps the exponent, up to Inf. (Measured:
	// this branch beats a branch-free select here.)
	return BF16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Float32 returns b as a float32; the conversion is exact.
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// Float64 returns b as a float64; the conversion is exact.
func (b BF16) Float64() float64 { return float64(b.Float32()) }

// IsNaN reports whether b is a NaN.
func (b BF16) IsNaN() bool { return b&0x7fff > 0x7f80 }

// Float16FromFloat64 rounds f to the nearest float16, ties to even, with a
// single rounding (going through float32 naively would round twice).
func Float16FromFloat64(f float64) F16 { return Float16FromFloat32(float32RoundOdd(f)) }

// BFloat16FromFloat64 rounds f to the nearest bfloat16, ties to even, with a
// single rounding.
func BFloat16FromFloat64(f float64) BF16 { return BFloat16FromFloat32(float32RoundOdd(f)) }

// float32RoundOdd converts f to float32 rounding to odd: an inexact result
// is the float32 next toward zero with its lowest bit forced to 1. Rounding
// that again to a format with at least two fewer significand bits gives the
// correctly rounded result, which is why the 16-bit conversions from float64
// and int64 go through it.
func float32RoundOdd(f float64) float32 {
	r := float32(f)
	if float64(r) == f || f != f {
		return r
	}
	b := math.Float32bits(r)
	if math.Abs(float64(r)) > math.Abs(f) {
		b-- // step the magnitude toward zero (Inf becomes MaxFloat32)
	}
	return math.Float32frombits(b | 1)
}

// float32RoundOddInt converts v to float32 rounding to odd, for the same
// reason as float32RoundOdd: int64 → float64 → float32 would round twice.
func float32RoundOddInt(v int64) float32 {
	u := uint64(v)
	neg := v < 0
	if neg {
		u = -u
	}
	var f float32
	if n := bits.Len64(u); n <= 24 {
		f = float32(u)
	} else {
		shift := n - 24
		t := u >> shift
		if u&(1<<shift-1) != 0 {
			t |= 1 // sticky
		}
		f = float32(math.Ldexp(float64(t), shift)) // t has 24 bits: exact
	}
	if neg {
		f = -f
	}
	return f
}
