package algorithms

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestRegistriesDoNotSeeEachOther(t *testing.T) {
	a := registryWith(t, AllReduce, "test_mine", reduceBroadcast(false))
	b := uncheckedRegistry(AllReduce, "test_mine", reduceBroadcast(true)) // the same name, apart
	if err := b.Register(AllReduce, "test_theirs", reduceBroadcast(false)); err != nil {
		t.Fatal(err)
	}
	if got := a.Algorithms(AllReduce); slices.Contains(got, "test_theirs") {
		t.Errorf("a lists %q, registered on b", got)
	}
	spec := Spec{Kind: AllReduce, Size: 3, Counts: []int{3}, ElemSize: 4, Algorithm: "test_mine", Registry: a}
	if err := Check(EveryRank(spec), 1); err != nil {
		t.Errorf("a's schedule: %v", err)
	}
	spec.Registry = b
	if err := Check(EveryRank(spec), 1); err == nil {
		t.Error("b's schedule of the same name, which drops a rank's input, passed the check: it ran a's")
	}
	spec.Registry, spec.Algorithm = a, "test_theirs"
	if _, err := Build(spec); !errors.Is(err, ErrBadSpec) {
		t.Errorf("Build of b's schedule from a: %v, want ErrBadSpec", err)
	}
}

func TestNilRegistryIsTheBuiltins(t *testing.T) {
	registryWith(t, AllReduce, "test_elsewhere", reduceBroadcast(false))
	var nilReg *Registry
	for _, k := range Kinds() {
		if got, want := nilReg.Algorithms(k), NewRegistry().Algorithms(k); !slices.Equal(got, want) || len(got) != len(builtin[k]) {
			t.Errorf("%v: a nil registry lists %q, want the built-ins %q", k, got, want)
		}
	}
	spec := Spec{Kind: AllReduce, Size: 4, Counts: []int{8}, ElemSize: 4, Algorithm: "rabenseifner"}
	sc, err := Build(spec)
	if err != nil || sc.Algorithm != "rabenseifner" {
		t.Fatalf("Build with a nil registry: %v, %v", sc, err)
	}
	spec.Algorithm = "test_elsewhere"
	if _, err := Build(spec); !errors.Is(err, ErrBadSpec) {
		t.Errorf("Build with a nil registry of a schedule registered elsewhere: %v, want ErrBadSpec", err)
	}
}

// TestRegisterWhileBuilding registers schedules on a registry that other
// goroutines build from meanwhile: run with -race. Every name a builder
// lists must build.
func TestRegisterWhileBuilding(t *testing.T) {
	r := NewRegistry()
	const added = 50
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range added {
				names := r.Algorithms(AllReduce)
				spec := Spec{Kind: AllReduce, Size: 3, Counts: []int{5}, ElemSize: 4, Algorithm: names[len(names)-1], Registry: r}
				if _, err := Build(spec); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range added {
		if err := r.Register(AllReduce, fmt.Sprintf("test_%d", i), reduceBroadcast(false)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if got, want := len(r.Algorithms(AllReduce)), len(builtin[AllReduce])+added; got != want {
		t.Errorf("%d all-reduce schedules after registering %d, want %d", got, added, want)
	}
}
