package reduce

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/tensor"
)

func TestKindStrings(t *testing.T) {
	want := []string{"sum", "product", "min", "max", "band", "bor", "bxor", "avg", "premul_sum"}
	var got []string
	for _, k := range Kinds() {
		if !k.Valid() {
			t.Errorf("%v not valid", k)
		}
		got = append(got, k.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Kinds() names = %v, want %v", got, want)
	}
	if Kinds()[0] != Sum || Kinds()[8] != PreMulSum {
		t.Error("Kinds() order")
	}
	for _, k := range []Kind{0, numKinds, 255} {
		if k.Valid() || !strings.HasPrefix(k.String(), "kind(") {
			t.Errorf("Kind(%d): Valid %v String %q", k, k.Valid(), k.String())
		}
	}
}

func TestOp(t *testing.T) {
	for _, k := range Kinds() {
		op := New(k)
		if op.Kind() != k {
			t.Errorf("New(%v).Kind() = %v", k, op.Kind())
		}
		if k == PreMulSum {
			if op.Valid() {
				t.Error("New(PreMulSum) is valid without a factor")
			}
			continue
		}
		if !op.Valid() || op.Factor() != 1 || op.String() != k.String() || op != New(k) {
			t.Errorf("New(%v): Valid %v Factor %v String %q", k, op.Valid(), op.Factor(), op)
		}
	}
	p := PreMul(0.25)
	if !p.Valid() || p.Kind() != PreMulSum || p.Factor() != 0.25 || p.String() != "premul_sum(0.25)" || p != PreMul(0.25) {
		t.Errorf("PreMul(0.25) = %v (valid %v, factor %v)", p, p.Valid(), p.Factor())
	}
	if PreMul(2).String() != "premul_sum(2)" || !PreMul(0).Valid() || !PreMul(-3).Valid() {
		t.Error("PreMul(2), PreMul(0) or PreMul(-3)")
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if PreMul(f).Valid() {
			t.Errorf("PreMul(%v) is valid", f)
		}
	}
	if (Op{}).Valid() || New(0).Valid() || New(numKinds).Valid() {
		t.Error("zero or out-of-range Op is valid")
	}
	if err := (Op{}).Supports(tensor.Float32); err == nil {
		t.Error("zero Op supports float32")
	}
}

// rejected lists exactly the (kind, dtype) pairs Supports must refuse.
var rejected = map[Kind][]tensor.DType{
	BAnd:      {tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64},
	BOr:       {tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64},
	BXor:      {tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64},
	Avg:       {tensor.Bool},
	PreMulSum: {tensor.Bool, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64},
}

// testOps is one valid Op per kind.
func testOps() []Op {
	var ops []Op
	for _, k := range Kinds() {
		if k == PreMulSum {
			ops = append(ops, PreMul(2.5))
		} else {
			ops = append(ops, New(k))
		}
	}
	return ops
}

func TestSupportsTable(t *testing.T) {
	for _, op := range testOps() {
		for _, dt := range tensor.DTypes() {
			err := op.Supports(dt)
			if want := slices.Contains(rejected[op.Kind()], dt); want != (err != nil) {
				t.Errorf("%v.Supports(%v) = %v, want rejected=%v", op, dt, err, want)
			}
		}
		for _, dt := range []tensor.DType{tensor.Invalid, 99} {
			if op.Supports(dt) == nil {
				t.Errorf("%v.Supports(%v) = nil", op, dt)
			}
		}
	}
	if got := New(BAnd).Supports(tensor.Float32).Error(); got != "reduce: band is not defined for float32" {
		t.Errorf("error text = %q", got)
	}
}
