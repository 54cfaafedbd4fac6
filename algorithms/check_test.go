package algorithms

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// reduceBroadcast is an all-reduce in two plain phases: every rank sends
// its input to rank 0, which reduces in rank order and sends the total
// back. forget leaves out the last rank's contribution, whose message is
// then never received.
func reduceBroadcast(forget bool) Generator {
	return func(b *Builder, s *Spec) {
		n, c := s.Counts[0], s.ChunkElems()
		in, out := whole(Input, 0, n), whole(Output, 0, n)
		if s.InPlace {
			in = out
		}
		if n == 0 {
			return
		}
		if s.Rank != 0 {
			sendAll(b, c, 0, in)
			recvAll(b, c, 0, out)
			return
		}
		if in != out {
			b.Copy(out, in)
		}
		last := s.Size
		if forget {
			last--
		}
		for q := 1; q < last; q++ {
			for j := range nchunks(n, c) {
				b.RecvReduce(q, piece(out, j, c), piece(out, j, c))
			}
		}
		for q := 1; q < s.Size; q++ {
			sendAll(b, c, q, out)
		}
	}
}

func registryWith(t *testing.T, kind Kind, name string, gen Generator) *Registry {
	t.Helper()
	r := NewRegistry()
	if err := r.Register(kind, name, gen); err != nil {
		t.Fatal(err)
	}
	return r
}

// uncheckedRegistry returns a registry holding gen under name, which
// Register would refuse: what Build and Check make of a wrong schedule.
func uncheckedRegistry(kind Kind, name string, gen Generator) *Registry {
	t := builtin
	t[kind] = append(slices.Clip(t[kind]), algorithm{name, gen})
	r := new(Registry)
	r.added.Store(&t)
	return r
}

func TestCheckProvesRegisteredSchedules(t *testing.T) {
	r := uncheckedRegistry(AllReduce, "test_forgetful", reduceBroadcast(true))
	if err := r.Register(AllReduce, "test_reduce_broadcast", reduceBroadcast(false)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 2, 3, 5} {
		base := Spec{Kind: AllReduce, Size: p, Counts: []int{3}, ElemSize: 4, ChunkBytes: 64, Algorithm: "test_reduce_broadcast", Registry: r}
		if err := Check(EveryRank(base), 1); err != nil {
			t.Errorf("p=%d: a correct schedule failed the check: %v", p, err)
		}
		if p < 2 {
			continue
		}
		base.Algorithm = "test_forgetful"
		if err := Check(EveryRank(base), 1); err == nil {
			t.Errorf("p=%d: a schedule that drops a rank's input passed the check", p)
		}
	}
}

func TestBuildTurnsAGeneratorsPanicIntoAnError(t *testing.T) {
	outOfBounds := func(b *Builder, s *Spec) { b.Copy(whole(Output, 0, s.Counts[0]+1), whole(Input, 0, s.Counts[0]+1)) }
	r := uncheckedRegistry(AllReduce, "test_out_of_bounds", outOfBounds)
	_, err := Build(Spec{Kind: AllReduce, Size: 1, Counts: []int{2}, ElemSize: 4, Algorithm: "test_out_of_bounds", Registry: r})
	if !errors.Is(err, ErrBadSchedule) || !strings.Contains(err.Error(), `"test_out_of_bounds"`) {
		t.Fatalf("Build of a generator writing out of bounds: %v, want ErrBadSchedule naming it", err)
	}
}

func TestRegisterRejects(t *testing.T) {
	gen := reduceBroadcast(false)
	for _, tc := range []struct {
		kind Kind
		name string
		gen  Generator
		want string
	}{
		{0, "x", gen, "unknown kind"},
		{AllReduce, "", gen, "needs a name"},
		{AllReduce, "x", nil, "needs a name and a generator"},
		{AllReduce, "ring", gen, `"ring" is taken`},
	} {
		if err := NewRegistry().Register(tc.kind, tc.name, tc.gen); !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%v, %q): %v, want an error saying %s", tc.kind, tc.name, err, tc.want)
		}
	}
}
