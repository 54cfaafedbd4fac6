package reduce

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gocomms/gocomms/tensor"
)

// Kind names a reduction operator.
type Kind uint8

// The reduction kinds. The zero Kind is invalid.
const (
	Sum Kind = iota + 1
	Product
	Min
	Max
	BAnd
	BOr
	BXor
	Avg
	PreMulSum

	numKinds // sentinel; keep last
)

var kindNames = [numKinds]string{
	Sum: "sum", Product: "product", Min: "min", Max: "max",
	BAnd: "band", BOr: "bor", BXor: "bxor", Avg: "avg", PreMulSum: "premul_sum",
}

// Kinds returns every valid kind in declaration order (a fresh slice).
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := Sum; k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// Valid reports whether k is one of the declared kinds.
func (k Kind) Valid() bool { return k >= Sum && k < numKinds }

// String returns the kind's name, e.g. "premul_sum", or "kind(N)".
func (k Kind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// Op is a reduction operator: a kind plus, for PreMulSum, a scale factor.
// It is an immutable, comparable value; the zero Op is invalid.
type Op struct {
	kind   Kind
	factor float64 // PreMulSum only; NaN marks "no factor given"
}

// New returns the operator for k. Every kind but PreMulSum is complete on
// its own; New(PreMulSum) returns an Op that is not Valid because a
// pre-multiplied sum needs a factor (use PreMul).
func New(k Kind) Op {
	if k == PreMulSum {
		return Op{kind: k, factor: math.NaN()}
	}
	return Op{kind: k}
}

// PreMul returns a sum whose result is scaled by factor, like NCCL's
// ncclRedOpCreatePreMulSum. The Op is Valid only for a finite factor: an
// infinite or NaN factor would make every element Inf or NaN, which is
// never what a caller meant.
func PreMul(factor float64) Op { return Op{kind: PreMulSum, factor: factor} }

// Kind returns the operator's kind.
func (o Op) Kind() Kind { return o.kind }

// Factor returns PreMulSum's scale factor, and 1 for every other kind.
func (o Op) Factor() float64 {
	if o.kind != PreMulSum {
		return 1
	}
	return o.factor
}

// Valid reports whether o is usable: a declared kind and, for PreMulSum, a
// finite factor.
func (o Op) Valid() bool {
	if o.kind == PreMulSum {
		return !math.IsNaN(o.factor) && !math.IsInf(o.factor, 0)
	}
	return o.kind.Valid()
}

// String returns the kind's name, with the factor for PreMulSum:
// "sum", "premul_sum(0.25)".
func (o Op) String() string {
	if o.kind == PreMulSum {
		return "premul_sum(" + strconv.FormatFloat(o.factor, 'g', -1, 64) + ")"
	}
	return o.kind.String()
}

// Supports returns nil if o is defined for dt, or an error saying why not:
//   - bitwise ops (band, bor, bxor) need an integer or bool dtype;
//   - avg needs a numeric dtype (not bool); integers divide truncating;
//   - premul_sum needs a floating-point dtype;
//   - sum, product, min and max work on every dtype (on bool: or, and,
//     and, or).
func (o Op) Supports(dt tensor.DType) error {
	if !o.Valid() {
		return fmt.Errorf("reduce: invalid op %v", o)
	}
	if !dt.Valid() {
		return fmt.Errorf("reduce: invalid dtype %v", dt)
	}
	var ok bool
	switch o.kind {
	case BAnd, BOr, BXor:
		ok = dt.IsInteger() || dt == tensor.Bool
	case Avg:
		ok = dt != tensor.Bool
	case PreMulSum:
		ok = dt.IsFloat()
	default:
		ok = true
	}
	if !ok {
		return fmt.Errorf("reduce: %v is not defined for %v", o.kind, dt)
	}
	return nil
}
