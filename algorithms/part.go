package algorithms

import (
	"errors"
	"fmt"
	"slices"
)

// CheckPart checks one rank's part of a collective alone, input and
// output giving the element counts of its Input and Output blocks: what
// can be proved without its peers' parts. Its regions lie in their
// blocks and it never writes Input (Fits); its scratch blocks are the
// sizes its regions use; every dependency is an earlier step, listed once
// in order; every message has another rank of the collective for peer,
// and its tags count up from 0 per peer and direction in program order,
// so that no receive is matched twice; and no two steps that touch one
// element, either writing it, can run at once: one depends on the other,
// through others or not. Its cost grows with the square of the steps.
//
// Check proves a whole collective built from a Generator; a Builder's
// schedules pass CheckPart by construction unless their steps were
// edited.
func CheckPart(s *Schedule, input, output []int) error {
	if err := s.Fits(input, output); err != nil {
		return err
	}
	used := make([]int, len(s.Scratch))
	for _, st := range s.Steps {
		for _, reg := range []Region{st.Src, st.Dst} {
			if reg.Buf == Scratch && reg.Block >= 0 && int(reg.Block) < len(used) {
				used[reg.Block] = max(used[reg.Block], reg.End())
			}
		}
	}
	if !slices.Equal(used, s.Scratch) {
		return fmt.Errorf("scratch blocks %v but regions use %v", s.Scratch, used)
	}
	sends, recvs := map[int]int{}, map[int]int{}
	// after[i] holds the steps step i runs after, directly or not.
	words := (len(s.Steps) + 63) / 64
	after := make([]uint64, len(s.Steps)*words)
	for i, st := range s.Steps {
		fail := func(err error) error { return fmt.Errorf("step %d (%v): %w", i, st, err) }
		if !slices.IsSorted(st.Deps) || len(slices.Compact(slices.Clone(st.Deps))) != len(st.Deps) {
			return fail(errors.New("deps not sorted and unique"))
		}
		if len(st.Deps) > 0 && (st.Deps[0] < 0 || int(st.Deps[len(st.Deps)-1]) >= i) {
			return fail(errors.New("dep not an earlier step"))
		}
		mine := after[i*words : (i+1)*words]
		for _, d := range st.Deps {
			for w, x := range after[int(d)*words : (int(d)+1)*words] {
				mine[w] |= x
			}
			mine[d/64] |= 1 << (d % 64)
		}
		var tags map[int]int
		switch st.Prim {
		case Send:
			tags = sends
		case Recv, RecvReduce:
			tags = recvs
		}
		if tags != nil {
			if st.Peer < 0 || st.Peer >= s.Size || st.Peer == s.Rank {
				return fail(fmt.Errorf("peer %d is no other rank of %d", st.Peer, s.Size))
			}
			if st.Tag != tags[st.Peer] {
				return fail(fmt.Errorf("tag %d with rank %d, want %d: tags count up in program order", st.Tag, st.Peer, tags[st.Peer]))
			}
			tags[st.Peer]++
		}
		for j := range i {
			if mine[j/64]&(1<<(j%64)) == 0 && conflicts(&s.Steps[j], &s.Steps[i]) {
				return fail(fmt.Errorf("race with step %d (%v): they touch an element, one writing it, and neither waits for the other", j, s.Steps[j]))
			}
		}
	}
	return nil
}
