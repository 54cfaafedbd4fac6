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
	if n := reflect.TypeFor[algorithms.Spec]().NumField(); n != 13 {
		t.Fatalf("algorithms.Spec has %d fields, plan.fits compares 13", n)
	}
}

// TestPlansKeepRegistriesApart: one name in two registries is two
// schedules, and Plans must not hand out one for the other.
func TestPlansKeepRegistriesApart(t *testing.T) {
	var plans Plans
	spec := algorithms.Spec{Kind: algorithms.AllReduce, Size: 2, Counts: []int{4}, ElemSize: 4, Algorithm: "mine"}
	// through reduces on rank root%Size and sends the total back: two
	// roots make two schedules, both of which Register's checker admits.
	through := func(root int) algorithms.Generator {
		return func(b *algorithms.Builder, s *algorithms.Spec) {
			n, c, root := s.Counts[0], s.ChunkElems(), root%s.Size
			out := algorithms.Region{Buf: algorithms.Output, Len: n}
			in := out
			if !s.InPlace {
				in.Buf = algorithms.Input
			}
			for off := 0; off < n; off += c {
				chunk := func(r algorithms.Region) algorithms.Region {
					r.Off, r.Len = off, min(c, n-off)
					return r
				}
				if s.Rank != root {
					b.Send(root, chunk(in))
					b.Recv(root, chunk(out))
					continue
				}
				if in != out {
					b.Copy(chunk(out), chunk(in))
				}
				for q := range s.Size {
					if q != root {
						b.RecvReduce(q, chunk(out), chunk(out))
					}
				}
				for q := range s.Size {
					if q != root {
						b.Send(q, chunk(out))
					}
				}
			}
		}
	}
	for _, gen := range []algorithms.Generator{through(0), through(1)} {
		spec.Registry = algorithms.NewRegistry()
		if err := spec.Registry.Register(algorithms.AllReduce, "mine", gen); err != nil {
			t.Fatal(err)
		}
		r := &Request{DType: tensor.Float32}
		if err := plans.Plan(r, spec); err != nil {
			t.Fatal(err)
		}
		built, err := algorithms.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := algorithms.Acknowledged(built)
		if !reflect.DeepEqual(r.Schedule.Steps, want.Steps) {
			t.Fatalf("planned %v from the cache, want the registry's %v", r.Schedule.Steps, want.Steps)
		}
	}
}

// TestPlanMessages: a batch's schedule sends each non-empty send from its
// input block and receives each non-empty receive into its output block,
// and the same shapes planned again share it, among collectives' plans.
func TestPlanMessages(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var plans Plans
		for range rapid.IntRange(1, 30).Draw(t, "ops") {
			size := rapid.IntRange(2, 5).Draw(t, "size")
			rank := rapid.IntRange(0, size-1).Draw(t, "rank")
			if rapid.Bool().Draw(t, "collective") {
				spec := algorithms.Spec{Kind: algorithms.AllReduce, Rank: rank, Size: size, Counts: []int{size}, ElemSize: 4}
				if err := plans.Plan(&Request{DType: tensor.Float32, Reduce: reduce.New(reduce.Sum)}, spec); err != nil {
					t.Fatal(err)
				}
				continue
			}
			msgs := make([]Message, rapid.IntRange(0, 4).Draw(t, "messages"))
			var peers []int
			for i := range msgs {
				peer := (rank + rapid.IntRange(1, size-1).Draw(t, "offset")) % size
				msgs[i] = Message{Peer: peer, Send: rapid.Bool().Draw(t, "send"), Bytes: rapid.IntRange(0, 3).Draw(t, "bytes")}
				if msgs[i].Bytes > 0 {
					peers = append(peers, peer)
				}
			}
			r := &Request{P2P: []P2PMessage{}}
			for _, m := range msgs {
				if m.Bytes > 0 {
					r.P2P = append(r.P2P, P2PMessage{Peer: m.Peer, Send: m.Send})
				}
			}
			plans.PlanMessages(r, rank, size, msgs)
			var moved []Message
			for _, s := range r.Schedule.Steps {
				switch {
				case s.Prim == algorithms.Send:
					if s.Src.Buf != algorithms.Input {
						t.Fatalf("a send reads %v", s.Src)
					}
					moved = append(moved, Message{Peer: s.Peer, Send: true, Bytes: s.Src.Len})
					if msgs[s.Src.Block] != moved[len(moved)-1] {
						t.Fatalf("step %+v sends block %d of %+v", s, s.Src.Block, msgs)
					}
				case s.Prim.Receives():
					if s.Dst.Buf != algorithms.Output {
						t.Fatalf("a receive writes %v", s.Dst)
					}
					moved = append(moved, Message{Peer: s.Peer, Bytes: s.Dst.Len})
					if msgs[s.Dst.Block] != moved[len(moved)-1] {
						t.Fatalf("step %+v receives block %d of %+v", s, s.Dst.Block, msgs)
					}
				}
			}
			if want := slices.DeleteFunc(slices.Clone(msgs), func(m Message) bool { return m.Bytes == 0 }); len(moved) != len(want) {
				t.Fatalf("%+v: schedule moves %+v", msgs, moved)
			}
			slices.Sort(peers)
			if got := r.Peers(); !slices.Equal(got, slices.Compact(peers)) {
				t.Fatalf("%+v: peers %v", msgs, got)
			}
			again := &Request{P2P: r.P2P}
			plans.PlanMessages(again, rank, size, slices.Clone(msgs))
			if again.Schedule != r.Schedule || again.Sig != r.Sig {
				t.Fatalf("%+v planned twice, two schedules", msgs)
			}
		}
	})
}
