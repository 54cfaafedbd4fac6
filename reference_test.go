package gocomms_test

import (
	"fmt"
	"math"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/reduce"
)

// The reference: every rank generates every rank's input with value(), so a
// plain loop over ranks computes what each collective must produce.

// value is rank r's element i of input block b in case seed: small integers
// that every dtype holds exactly and whose sums never overflow, except for
// Product, whose integer results wrap in the reference exactly as in the
// kernels (wrapping is order-independent).
func value(dt gocomms.DType, op reduce.Kind, seed, r, b, i int) int64 {
	h := seed*131 + r*31 + b*17 + i*7
	switch {
	case dt == gocomms.Bool:
		return int64(h/3%2+2) % 2
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

// fill makes rank r's input block b of n elements.
func fill(dt gocomms.DType, op reduce.Kind, seed, r, b, n int) *gocomms.Tensor {
	t := mustTensor(dt, n)
	for i := range n {
		t.SetInt64(i, value(dt, op, seed, r, b, i))
	}
	return t
}

func mustTensor(dt gocomms.DType, n int) *gocomms.Tensor {
	t, err := gocomms.NewTensor(dt, n)
	if err != nil {
		panic(err)
	}
	return t
}

// combineRef reduces every rank's element with op: exactly for integers and
// bool (in int64, wrapped by the caller's tensor), in float64 for floats.
func combineRef(dt gocomms.DType, op gocomms.ReduceOp, vals []int64) (int64, float64) {
	k := op.Kind()
	if !dt.IsFloat() {
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
		if dt == gocomms.Bool {
			switch k {
			case reduce.Sum, reduce.Max, reduce.BOr:
				acc = b2i(anyNonZero(vals))
			case reduce.Product, reduce.Min, reduce.BAnd:
				acc = b2i(allNonZero(vals))
			case reduce.BXor:
				acc = 0
				for _, v := range vals {
					acc ^= v
				}
			}
		}
		if k == reduce.Avg {
			acc /= int64(len(vals)) // Go truncates toward zero, as the kernels
		}
		return acc, 0
	}
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
	return 0, acc
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func anyNonZero(vs []int64) bool {
	for _, v := range vs {
		if v != 0 {
			return true
		}
	}
	return false
}

func allNonZero(vs []int64) bool {
	for _, v := range vs {
		if v == 0 {
			return false
		}
	}
	return true
}

// tolerance is the relative error allowed for a float dtype reduced over
// size ranks.
func tolerance(dt gocomms.DType, size int) float64 {
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
	return eps * float64(size+2)
}

// checkReduced compares got[i] with the reduction of vals(i) over ranks.
func checkReduced(got *gocomms.Tensor, op gocomms.ReduceOp, size int, vals func(i int) []int64) error {
	dt := got.DType()
	want := mustTensor(dt, 1)
	for i := range got.Numel() {
		iv, fv := combineRef(dt, op, vals(i))
		if dt.IsFloat() {
			g := got.Float64At(i)
			if d := math.Abs(g - fv); d > tolerance(dt, size)*(1+math.Abs(fv)) && !(math.IsInf(g, 0) && math.IsInf(fv, 0) && (g > 0) == (fv > 0)) {
				return fmt.Errorf("element %d = %v, want %v", i, g, fv)
			}
			continue
		}
		want.SetInt64(0, iv)
		if g, w := got.Int64At(i), want.Int64At(0); g != w {
			return fmt.Errorf("element %d = %d, want %d", i, g, w)
		}
	}
	return nil
}

// checkCopied compares got with the generated block (r, b).
func checkCopied(got *gocomms.Tensor, op reduce.Kind, seed, r, b int) error {
	want := fill(got.DType(), op, seed, r, b, got.Numel())
	for i := range got.Numel() {
		if got.Int64At(i) != want.Int64At(i) {
			return fmt.Errorf("element %d = %d, want rank %d block %d's %d", i, got.Int64At(i), r, b, want.Int64At(i))
		}
	}
	return nil
}

// validOps lists the ops defined for dt.
func validOps(dt gocomms.DType) []gocomms.ReduceOp {
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
