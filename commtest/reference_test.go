package commtest

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// TestReferenceHoldsAtAnySize reduces the inputs of up to 600 ranks with
// the kernels themselves (reduce.Combine, then reduce.Finish), in an
// order rapid picks, as any schedule might, and checks that the reference
// accepts what they give: what the dtype holds, wrapped or overflowed,
// whatever the order.
func TestReferenceHoldsAtAnySize(t *testing.T) {
	dtypes := tensor.DTypes()
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom(dtypes).Draw(t, "dtype")
		op := rapid.SampledFrom(ValidOps(dt)).Draw(t, "op")
		size := rapid.IntRange(1, 600).Draw(t, "ranks")
		seed, i := rapid.IntRange(0, 1000).Draw(t, "seed"), rapid.IntRange(0, 50).Draw(t, "element")
		order := rapid.Permutation(rangeOf(size)).Draw(t, "order")

		vals := make([]int64, size)
		for r := range size {
			vals[r] = value(dt, op.Kind(), seed, r, 0, i)
		}
		acc := element(t, dt, vals[order[0]])
		for _, r := range order[1:] {
			b := element(t, dt, vals[r])
			reduce.Combine(op, dt, acc.Bytes(), acc.Bytes(), b.Bytes())
		}
		reduce.Finish(op, dt, acc.Bytes(), size)

		iv, fv := combine(dt, op, vals)
		if dt.IsFloat() {
			if got := acc.Float64At(0); !closeEnough(dt, size, got, fv) {
				t.Fatalf("%v %v over %d ranks: the kernels give %v, the reference %v", dt, op, size, got, fv)
			}
			return
		}
		if got, want := acc.Int64At(0), wrap(dt, iv); got != want {
			t.Fatalf("%v %v over %d ranks: the kernels give %d, the reference %d", dt, op, size, got, want)
		}
	})
}

// element is a one-element tensor of dt holding v.
func element(t *rapid.T, dt gocomms.DType, v int64) *tensor.Tensor {
	x, err := tensor.New(dt, 1)
	if err != nil {
		t.Fatal(err)
	}
	x.SetInt64(0, v)
	return x
}

func rangeOf(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
