package algorithms

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRegisterRefusesWrongSchedules: a schedule that forgets a rank's
// block, reduces one twice, or ignores in-place is refused with the
// checker's reason, and stays out of the registry.
func TestRegisterRefusesWrongSchedules(t *testing.T) {
	twice := func(b *Builder, s *Spec) {
		reduceBroadcast(false)(b, s)
		if n := s.Counts[0]; s.Rank == 0 && s.Size > 1 && n > 0 {
			b.Accumulate(whole(Output, 0, n), whole(Input, 0, n))
		}
	}
	notInPlace := func(b *Builder, s *Spec) {
		if n := s.Counts[0]; n > 0 {
			b.Copy(whole(Output, 0, n), whole(Input, 0, n))
		}
	}
	for _, tc := range []struct {
		name string
		gen  Generator
		want string
	}{
		{"test_forgetful", reduceBroadcast(true), "for 2 ranks, counts [1]"},
		{"test_twice", twice, "output block 0 element 0"},
		{"test_not_in_place", notInPlace, "in-place schedule touches Input"},
	} {
		r := NewRegistry()
		err := r.Register(AllReduce, tc.name, tc.gen)
		if !errors.Is(err, ErrBadSchedule) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Register(%q): %v, want ErrBadSchedule naming it and saying %q", tc.name, err, tc.want)
		}
		if got := r.Algorithms(AllReduce); len(got) != len(builtin[AllReduce]) {
			t.Errorf("Register(%q) refused, yet the registry lists %q", tc.name, got)
		}
	}
}

// TestRegisterAdmitsTheBuiltins: every built-in generator registers under
// another name, but Bruck's all-to-all, which serves uniform counts only
// and is refused at uneven ones; the time each proof takes is logged.
func TestRegisterAdmitsTheBuiltins(t *testing.T) {
	var total, slowest time.Duration
	for _, k := range Kinds() {
		for _, a := range builtin[k] {
			start := time.Now()
			err := NewRegistry().Register(k, "test_"+a.name, a.gen)
			d := time.Since(start)
			total, slowest = total+d, max(slowest, d)
			t.Logf("%v %s: %v", k, a.name, d)
			if k == AllToAll && a.name == "bruck" {
				if !errors.Is(err, ErrBadSchedule) {
					t.Errorf("Bruck's all-to-all registered for uneven counts: %v", err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%v %s: %v", k, a.name, err)
			}
		}
	}
	t.Logf("all built-ins: %v, the slowest %v", total, slowest)
}
