package collective

import (
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// TestPlansMatchPlan: whatever was planned before, Plans sets a request up
// as Request.Plan does, and shares the schedule of a spec planned before.
func TestPlansMatchPlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var plans Plans
		kinds := []algorithms.Kind{algorithms.AllReduce, algorithms.Reduce, algorithms.Broadcast, algorithms.AllGather, algorithms.ReduceScatter}
		dtypes := []tensor.DType{tensor.Float32, tensor.Int64}
		reds := []reduce.Op{{}, reduce.New(reduce.Sum), reduce.New(reduce.Max)}
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			size := rapid.IntRange(1, 5).Draw(t, "size")
			kind := rapid.SampledFrom(kinds).Draw(t, "kind")
			n := 1
			if kind == algorithms.AllGather || kind == algorithms.ReduceScatter {
				n = size
			}
			counts := make([]int, n)
			for i := range counts {
				counts[i] = rapid.IntRange(0, 3).Draw(t, "count")
			}
			dt := rapid.SampledFrom(dtypes).Draw(t, "dtype")
			spec := algorithms.Spec{
				Kind: kind, Rank: rapid.IntRange(0, size-1).Draw(t, "rank"), Size: size,
				Root: rapid.IntRange(0, size-1).Draw(t, "root"), Counts: counts, ElemSize: dt.Size(),
				ChunkBytes: rapid.SampledFrom([]int{0, 8}).Draw(t, "chunk"),
			}
			red := rapid.SampledFrom(reds).Draw(t, "reduce")
			cached, fresh := &Request{DType: dt, Reduce: red}, &Request{DType: dt, Reduce: red}
			if err := plans.Plan(cached, spec); err != nil {
				t.Fatal(err)
			}
			again := &Request{DType: dt, Reduce: red}
			if err := plans.Plan(again, spec); err != nil {
				t.Fatal(err)
			}
			if err := fresh.Plan(spec); err != nil {
				t.Fatal(err)
			}
			if again.Schedule != cached.Schedule {
				t.Fatalf("%+v planned twice, two schedules", spec)
			}
			if !reflect.DeepEqual(cached.Schedule.Steps, fresh.Schedule.Steps) || cached.Sig != fresh.Sig ||
				!reflect.DeepEqual(cached.Results, fresh.Results) || !reflect.DeepEqual(cached.Peers(), fresh.Peers()) {
				t.Fatalf("%+v planned from the cache differs from Plan", spec)
			}
			// The caller's slice changing afterwards leaves the plan alone.
			spec.Counts = slices.Clone(counts)
			counts[0]++
			later := &Request{DType: dt, Reduce: red}
			if err := plans.Plan(later, spec); err != nil || later.Schedule != cached.Schedule {
				t.Fatalf("%+v: the plan changed with the caller's counts (%v)", spec, err)
			}
		}
	})
}

// Plans compares every field of a spec: a field added to Spec must be
// added to plan.fits too.
func TestPlansKnowEverySpecField(t *testing.T) {
	if n := reflect.TypeFor[algorithms.Spec]().NumField(); n != 12 {
		t.Fatalf("algorithms.Spec has %d fields, plan.fits compares 12", n)
	}
}
