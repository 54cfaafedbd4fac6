package algorithms

import (
	"strings"
	"testing"
)

// TestCheckPart: every rank's part of every built-in schedule passes;
// parts edited to race, to receive one message twice, to depend on a
// later step or to send to themselves fail, saying why.
func TestCheckPart(t *testing.T) {
	for _, k := range Kinds() {
		for _, name := range NewRegistry().Algorithms(k) {
			for _, specs := range admitCases(k, 4) {
				for _, s := range specs {
					s.Algorithm = name
					sc, err := Build(s)
					if err != nil {
						continue // a schedule that does not serve these specs
					}
					if err := CheckPart(sc, s.Blocks(Input), s.Blocks(Output)); err != nil {
						t.Errorf("%v %s rank %d: %v", k, name, s.Rank, err)
					}
				}
			}
		}
	}
	s := Spec{Kind: AllReduce, Size: 3, Counts: []int{4}, ElemSize: 4, ChunkBytes: 8, Algorithm: "ring"}
	for _, tc := range []struct {
		name string
		edit func(sc *Schedule)
		want string
	}{
		{"race", func(sc *Schedule) {
			for i := range sc.Steps {
				sc.Steps[i].Deps = nil
			}
		}, "race with step"},
		{"twice", func(sc *Schedule) {
			for i, st := range sc.Steps {
				if st.Prim == RecvReduce {
					sc.Steps = append(sc.Steps, sc.Steps[i])
					return
				}
			}
		}, "tags count up"},
		{"later dep", func(sc *Schedule) { sc.Steps[0].Deps = []int32{1} }, "not an earlier step"},
		{"itself", func(sc *Schedule) {
			for i, st := range sc.Steps {
				if st.Prim == Send {
					sc.Steps[i].Peer = sc.Rank
					return
				}
			}
		}, "no other rank"},
	} {
		sc, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(sc)
		if err := CheckPart(sc, s.Blocks(Input), s.Blocks(Output)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
