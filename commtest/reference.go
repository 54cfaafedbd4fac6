package commtest

import (
	"math"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/reduce"
)

// value is rank r's element i of input block b in case seed: small integers
// that every dtype holds exactly. Their reductions may leave the dtype's
// range at large rank counts, where the reference computes what the dtype
// holds (combine, held): wrapping, for integers, does not depend on the
// order of the reduction, and neither does the overflow of a product of
// factors of magnitude 1 or 2, whose partial products only grow.
// Unsigned arithmetic keeps any seed's values in range.
func value(dt gocomms.DType, op reduce.Kind, seed, r, b, i int) int64 {
	h := uint(seed*131 + r*31 + b*17 + i*7)
	switch {
	case dt == gocomms.Bool:
		return int64(h / 3 % 2)
	case op == reduce.Product:
		if h%5 == 0 {
			return 2
		}
		if h%3 == 0 && dt.IsSigned() {
			return -1
		}
		return 1
	case dt.IsFloat() || dt.IsSigned():
		return int64(h%7) - 3
	default:
		return int64(h % 7)
	}
}

// combine reduces every rank's element with op: exactly for integers and
// bool (in int64, wrapped by the caller's tensor), in float64 for floats,
// overflowing to an infinity where dt would (held).
func combine(dt gocomms.DType, op gocomms.ReduceOp, vals []int64) (int64, float64) {
	k := op.Kind()
	if dt.IsFloat() {
		return 0, held(dt, combineFloat(op, vals))
	}
	if dt == gocomms.Bool {
		return combineBool(k, vals), 0
	}
	acc := vals[0]
	for _, v := range vals[1:] {
		switch k {
		case reduce.Sum, reduce.Avg:
			acc += v
		case reduce.Product:
			acc *= v
		case reduce.Min:
			acc = min(acc, v)
		case reduce.Max:
			acc = max(acc, v)
		case reduce.BAnd:
			acc &= v
		case reduce.BOr:
			acc |= v
		case reduce.BXor:
			acc ^= v
		}
	}
	if k == reduce.Avg {
		// The kernels divide the sum as dt holds it, wrapped, and Go
		// truncates toward zero as they do.
		n := int64(len(vals))
		if acc = wrap(dt, acc); dt.IsSigned() {
			acc /= n
		} else {
			acc = int64(uint64(acc) / uint64(n))
		}
	}
	return acc, 0
}

// held is what dt holds of v, a float result: an infinity from where
// rounding to nearest leaves the finite values, half a unit in the last
// place past the largest. (Values within range round, which closeEnough
// allows for.)
func held(dt gocomms.DType, v float64) float64 {
	var overflow float64
	switch dt {
	case gocomms.Float16:
		overflow = 65520 // 65504 + 16
	case gocomms.BFloat16:
		overflow = 0x1.ffp127
	case gocomms.Float32:
		overflow = 0x1.ffffffp127
	default:
		return v
	}
	if math.Abs(v) >= overflow {
		return math.Inf(int(math.Copysign(1, v)))
	}
	return v
}

// combineBool reduces 0/1 values as logic: sum, max and bor are or;
// product, min and band are and; bxor is parity.
func combineBool(k reduce.Kind, vals []int64) int64 {
	var or, and, xor int64 = 0, 1, 0
	for _, v := range vals {
		or |= v
		and &= v
		xor ^= v
	}
	switch k {
	case reduce.Product, reduce.Min, reduce.BAnd:
		return and
	case reduce.BXor:
		return xor
	default:
		return or
	}
}

func combineFloat(op gocomms.ReduceOp, vals []int64) float64 {
	k := op.Kind()
	acc := float64(vals[0])
	for _, v := range vals[1:] {
		f := float64(v)
		switch k {
		case reduce.Sum, reduce.Avg, reduce.PreMulSum:
			acc += f
		case reduce.Product:
			acc *= f
		case reduce.Min:
			acc = math.Min(acc, f)
		case reduce.Max:
			acc = math.Max(acc, f)
		}
	}
	switch k {
	case reduce.Avg:
		acc /= float64(len(vals))
	case reduce.PreMulSum:
		acc *= op.Factor()
	}
	return acc
}

// closeEnough reports whether a float result got is want to within the
// rounding a reduction of dt over size ranks may add; NaN never is.
func closeEnough(dt gocomms.DType, size int, got, want float64) bool {
	if math.IsInf(want, 0) {
		return got == want
	}
	var eps float64
	switch dt {
	case gocomms.Float16:
		eps = 1e-3
	case gocomms.BFloat16:
		eps = 8e-3
	case gocomms.Float32:
		eps = 1.2e-7
	default:
		eps = 2.3e-16
	}
	return math.Abs(got-want) <= eps*float64(size+2)*(1+math.Abs(want))
}

// ValidOps lists the reduce ops defined for dt, in a fixed order; PreMulSum
// appears with factor 0.5.
func ValidOps(dt gocomms.DType) []gocomms.ReduceOp {
	all := []gocomms.ReduceOp{gocomms.Sum, gocomms.Product, gocomms.Min, gocomms.Max, gocomms.BAnd,
		gocomms.BOr, gocomms.BXor, gocomms.Avg, gocomms.PreMulSum(0.5)}
	var out []gocomms.ReduceOp
	for _, op := range all {
		if op.Supports(dt) == nil {
			out = append(out, op)
		}
	}
	return out
}
