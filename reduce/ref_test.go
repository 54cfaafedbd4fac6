package reduce

// An independent, per-element reference for Combine and Finish. It never
// calls the kernels or the tensor package's conversions: elements are read
// with encoding/binary, integer results wrap by explicit masking, float
// results are computed in float64 and rounded with math.Frexp/Ldexp.

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/gocomms/gocomms/tensor"
)

var ne = binary.NativeEndian

func loadBits(dt tensor.DType, buf []byte, i int) uint64 {
	switch dt.Size() {
	case 1:
		return uint64(buf[i])
	case 2:
		return uint64(ne.Uint16(buf[2*i:]))
	case 4:
		return uint64(ne.Uint32(buf[4*i:]))
	}
	return ne.Uint64(buf[8*i:])
}

func storeBits(dt tensor.DType, buf []byte, i int, v uint64) {
	switch dt.Size() {
	case 1:
		buf[i] = byte(v)
	case 2:
		ne.PutUint16(buf[2*i:], uint16(v))
	case 4:
		ne.PutUint32(buf[4*i:], uint32(v))
	default:
		ne.PutUint64(buf[8*i:], v)
	}
}

func widthMask(dt tensor.DType) uint64 {
	if dt.Size() == 8 {
		return math.MaxUint64
	}
	return 1<<(8*dt.Size()) - 1
}

// signExtend interprets the low bits of v as a signed dt value.
func signExtend(dt tensor.DType, v uint64) int64 {
	shift := 64 - 8*dt.Size()
	return int64(v<<shift) >> shift
}

// halfFormat describes a 16-bit float: significand bits p (with the
// implicit one), exponent of the smallest normal, largest finite value.
type halfFormat struct {
	p, emin   int
	maxFinite float64
	expBits   uint
}

var (
	f16Format  = halfFormat{p: 11, emin: -14, maxFinite: 65504, expBits: 5}
	bf16Format = halfFormat{p: 8, emin: -126, maxFinite: 0x1.fep127, expBits: 8}
)

func (h halfFormat) decode(bits uint64) float64 {
	manBits := uint(h.p - 1)
	sign := 1.0
	if bits&0x8000 != 0 {
		sign = -1
	}
	exp := int(bits>>manBits) & (1<<h.expBits - 1)
	mant := float64(bits & (1<<manBits - 1))
	switch exp {
	case 1<<h.expBits - 1:
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(mant, h.emin-int(manBits))
	}
	return sign * math.Ldexp(float64(int(1)<<manBits)+mant, exp-1+h.emin-int(manBits))
}

// encode returns the bits of a value the format represents exactly.
func (h halfFormat) encode(v float64) uint64 {
	manBits := uint(h.p - 1)
	var sign uint64
	if math.Signbit(v) {
		sign = 0x8000
	}
	infBits := uint64(1<<h.expBits-1) << manBits
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return infBits | 1<<(manBits-1)
	case math.IsInf(v, 0):
		return sign | infBits
	case a < math.Ldexp(1, h.emin): // zero or subnormal
		return sign | uint64(math.Ldexp(a, int(manBits)-h.emin))
	}
	frac, e := math.Frexp(a) // a = frac·2^e, frac in [0.5, 1)
	exp := uint64(e - 1 - h.emin + 1)
	mant := uint64(math.Ldexp(frac, h.p)) - 1<<manBits
	return sign | exp<<manBits | mant
}

// round rounds x to the format, to nearest even, with gradual underflow
// and overflow to ±Inf, by scaling to an integer significand.
func (h halfFormat) round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	_, e := math.Frexp(x)
	ulpExp := max(e-h.p, h.emin-h.p+1)
	r := math.Ldexp(math.RoundToEven(math.Ldexp(x, -ulpExp)), ulpExp)
	if math.Abs(r) > h.maxFinite {
		return math.Copysign(math.Inf(1), x)
	}
	return math.Copysign(r, x) // keeps the sign of results that round to zero
}

func decodeFloat(dt tensor.DType, bits uint64) float64 {
	switch dt {
	case tensor.Float16:
		return f16Format.decode(bits)
	case tensor.BFloat16:
		return bf16Format.decode(bits)
	case tensor.Float32:
		return float64(math.Float32frombits(uint32(bits)))
	}
	return math.Float64frombits(bits)
}

// roundFloat rounds an exact-enough float64 result to dt as the spec says:
// float32 and the 16-bit formats accumulate in float32 first.
func roundFloat(dt tensor.DType, v float64) float64 {
	switch dt {
	case tensor.Float16:
		return f16Format.round(float64(float32(v)))
	case tensor.BFloat16:
		return bf16Format.round(float64(float32(v)))
	case tensor.Float32:
		return float64(float32(v))
	}
	return v
}

func encodeFloat(dt tensor.DType, v float64) uint64 {
	switch dt {
	case tensor.Float16:
		return f16Format.encode(v)
	case tensor.BFloat16:
		return bf16Format.encode(v)
	case tensor.Float32:
		return uint64(math.Float32bits(float32(v)))
	}
	return math.Float64bits(v)
}

func refMin(x, y float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x < y:
		return x
	case y < x:
		return y
	case math.Signbit(x): // equal: only ±0 can differ, and -0 is the min
		return x
	}
	return y
}

func refMax(x, y float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x > y:
		return x
	case y > x:
		return y
	case math.Signbit(x):
		return y
	}
	return x
}

// refElem combines one pair of elements given as raw bits.
func refElem(k Kind, dt tensor.DType, x, y uint64) uint64 {
	if k == Avg || k == PreMulSum {
		k = Sum
	}
	switch {
	case dt == tensor.Bool:
		p, q := x != 0, y != 0
		var r bool
		switch k {
		case Sum, Max, BOr:
			r = p || q
		case Product, Min, BAnd:
			r = p && q
		case BXor:
			r = p != q
		}
		if r {
			return 1
		}
		return 0
	case dt.IsFloat():
		a, b := decodeFloat(dt, x), decodeFloat(dt, y)
		var r float64
		switch k {
		case Sum:
			r = a + b // exact or innocuously rounded: float64 has > 2·24+2 bits
		case Product:
			r = a * b
		case Min:
			r = refMin(a, b)
		case Max:
			r = refMax(a, b)
		}
		return encodeFloat(dt, roundFloat(dt, r))
	}
	mask := widthMask(dt)
	sx, sy := signExtend(dt, x), signExtend(dt, y)
	less := x&mask < y&mask
	if dt.IsSigned() {
		less = sx < sy
	}
	switch k {
	case Sum:
		return (x + y) & mask
	case Product:
		return (x * y) & mask // the low bits of a product do not depend on signedness
	case Min:
		if less {
			return x & mask
		}
		return y & mask
	case Max:
		if less {
			return y & mask
		}
		return x & mask
	case BAnd:
		return x & y & mask
	case BOr:
		return (x | y) & mask
	case BXor:
		return (x ^ y) & mask
	}
	panic("unreachable")
}

func refCombine(k Kind, dt tensor.DType, a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range len(a) / dt.Size() {
		storeBits(dt, out, i, refElem(k, dt, loadBits(dt, a, i), loadBits(dt, b, i)))
	}
	return out
}

// refFinish computes Finish's result for one element.
func refFinishElem(op Op, dt tensor.DType, x uint64, n int) uint64 {
	switch op.Kind() {
	case Avg:
		if dt.IsFloat() {
			v := decodeFloat(dt, x)
			switch dt {
			case tensor.Float64:
				return encodeFloat(dt, v/float64(n))
			default: // a float32 division (float64 then float32 rounds the same), then the element type
				return encodeFloat(dt, roundFloat(dt, v/float64(float32(n))))
			}
		}
		var q big.Int
		if dt.IsSigned() {
			q.Quo(big.NewInt(signExtend(dt, x)), big.NewInt(int64(n))) // Quo truncates toward zero
			return uint64(q.Int64()) & widthMask(dt)
		}
		q.Quo(new(big.Int).SetUint64(x), new(big.Int).SetUint64(uint64(n)))
		return q.Uint64()
	case PreMulSum:
		v := decodeFloat(dt, x)
		if dt == tensor.Float64 {
			return encodeFloat(dt, v*op.Factor())
		}
		return encodeFloat(dt, roundFloat(dt, v*float64(float32(op.Factor())))) // exact product, then float32
	}
	return x
}

// sameElem compares raw elements, treating any two NaNs as equal.
func sameElem(dt tensor.DType, x, y uint64) bool {
	if dt.IsFloat() && math.IsNaN(decodeFloat(dt, x)) {
		return math.IsNaN(decodeFloat(dt, y))
	}
	return x == y
}
