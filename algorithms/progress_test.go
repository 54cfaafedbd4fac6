package algorithms

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// relay is rank 0 of a small program: receive from 1, forward to 2, then
// receive from 1 again into the same region (which must wait for the send).
func relay() *Schedule {
	b := NewBuilder(0, 4)
	b.Recv(1, out(0, 4)) // 0
	b.Send(2, out(0, 4)) // 1: after 0
	b.Recv(1, out(0, 4)) // 2: after 1 (write after read)
	b.Recv(3, out(8, 4)) // 3: independent
	b.Send(2, in(0, 4))  // 4: independent
	return b.Build("relay")
}

func TestProgressArrivalBeforeDeps(t *testing.T) {
	p := NewProgress(relay())
	var ready []int
	var err error
	var step int
	// The second message overtakes the first and even Start.
	ready, step, err = p.Arrive(1, 1, ready)
	if err != nil || step != 2 || len(ready) != 0 {
		t.Fatalf("early Arrive(1, 1) = %v, %d, %v", ready, step, err)
	}
	if ready = p.Start(ready); !slices.Equal(ready, []int{4}) {
		t.Fatalf("Start = %v, want [4]", ready)
	}
	if ready, step, err = p.Arrive(1, 0, ready[:0]); err != nil || step != 0 || !slices.Equal(ready, []int{0}) {
		t.Fatalf("Arrive(1, 0) = %v, %d, %v", ready, step, err)
	}
	if ready = p.Complete(0, ready[:0]); !slices.Equal(ready, []int{1}) {
		t.Fatalf("Complete(0) = %v, want [1]", ready)
	}
	// Step 2's message is already here; only the send held it back.
	if ready = p.Complete(1, ready[:0]); !slices.Equal(ready, []int{2}) {
		t.Fatalf("Complete(1) = %v, want [2]", ready)
	}
	ready = p.Complete(2, ready[:0])
	ready = p.Complete(4, ready)
	if len(ready) != 0 || p.Done() || p.Remaining() != 1 {
		t.Fatalf("ready %v, done %v, remaining %d", ready, p.Done(), p.Remaining())
	}
	if w := p.Waiting(nil); !slices.Equal(w, []int{3}) {
		t.Fatalf("Waiting = %v, want [3]", w)
	}
	ready, _, _ = p.Arrive(3, 0, ready[:0])
	p.Complete(ready[0], nil)
	if !p.Done() || len(p.Waiting(nil)) != 0 {
		t.Fatalf("not done after every step")
	}
}

func TestProgressArriveErrors(t *testing.T) {
	p := NewProgress(relay())
	p.Start(nil)
	if _, _, err := p.Arrive(1, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		peer, tag int
		want      string
	}{
		{1, 0, "duplicate message from rank 1 with tag 0"},
		{1, 2, "unexpected message from rank 1 with tag 2"},
		{2, 0, "unexpected message from rank 2 with tag 0"},
		{9, 0, "unexpected message from rank 9"},
		{-1, 0, "unexpected message from rank -1"},
		{3, -1, "unexpected message from rank 3 with tag -1"},
	} {
		ready, step, err := p.Arrive(tc.peer, tc.tag, []int{7})
		if err == nil || !strings.Contains(err.Error(), tc.want) || step != -1 || !slices.Equal(ready, []int{7}) {
			t.Errorf("Arrive(%d, %d) = %v, %d, %v; want error %q", tc.peer, tc.tag, ready, step, err, tc.want)
		}
	}
}

func TestProgressWaitingSortedUnique(t *testing.T) {
	b := NewBuilder(2, 6)
	for _, peer := range []int{5, 0, 5, 3, 0, 1} {
		b.Recv(peer, Region{Buf: Scratch, Block: b.Scratch(1), Len: 1})
	}
	p := NewProgress(b.Build("x"))
	p.Start(nil)
	if w := p.Waiting(nil); !slices.Equal(w, []int{0, 1, 3, 5}) {
		t.Fatalf("Waiting = %v", w)
	}
	p.Arrive(0, 0, nil)
	p.Arrive(1, 0, nil)
	p.Arrive(5, 1, nil)
	if w := p.Waiting([]int{42}); !slices.Equal(w, []int{42, 0, 3, 5}) {
		t.Fatalf("Waiting = %v", w)
	}
}

func TestProgressCompleteMisuse(t *testing.T) {
	p := NewProgress(relay())
	ready := p.Start(nil)
	for _, bad := range []int{-1, 0, 5, 100} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "not running") {
					t.Errorf("Complete(%d) panic %v", bad, r)
				}
			}()
			p.Complete(bad, nil)
		}()
	}
	p.Complete(ready[0], nil)
	defer func() {
		if recover() == nil {
			t.Error("completing a step twice did not panic")
		}
	}()
	p.Complete(ready[0], nil)
}

func TestProgressEmptySchedule(t *testing.T) {
	s, err := Build(Spec{Kind: Barrier, Size: 1, ElemSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := NewProgress(s)
	if ready := p.Start(nil); len(ready) != 0 || !p.Done() {
		t.Fatalf("empty schedule: ready %v done %v", ready, p.Done())
	}
}

func TestProgressHandMadeSchedule(t *testing.T) {
	s := &Schedule{Rank: 0, Size: 2, Steps: []Step{
		{Prim: Recv, Peer: 1, Tag: 0, Dst: out(0, 1)},
		{Prim: Send, Peer: 1, Tag: 0, Src: out(0, 1), Deps: []int32{0}},
	}}
	p := NewProgress(s)
	if s.ix != nil {
		t.Fatal("NewProgress modified a shared schedule")
	}
	ready := p.Start(nil)
	ready, _, _ = p.Arrive(1, 0, ready)
	ready = p.Complete(ready[0], ready[:0])
	p.Complete(ready[0], nil)
	if !p.Done() {
		t.Fatal("hand-made schedule did not finish")
	}
}

// drive runs one rank's schedule to completion, pretending every message
// arrives up front, and returns the completion order.
func drive(p *Progress, ready, order []int) []int {
	s := p.Schedule()
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Prim.Receives() {
			ready, _, _ = p.Arrive(st.Peer, st.Tag, ready)
		}
	}
	ready = p.Start(ready)
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = p.Complete(i, ready[:len(ready)-1])
		order = append(order, i)
	}
	return order
}

func TestProgressResetReplays(t *testing.T) {
	s, err := Build(Spec{Kind: AllReduce, Rank: 3, Size: 5, Counts: []int{1000}, ElemSize: 4, ChunkBytes: 64, Algorithm: "ring"})
	if err != nil {
		t.Fatal(err)
	}
	p := NewProgress(s)
	first := drive(p, nil, nil)
	if !p.Done() || len(first) != len(s.Steps) {
		t.Fatalf("completed %d of %d steps", len(first), len(s.Steps))
	}
	p.Reset()
	if p.Done() {
		t.Fatal("done after Reset")
	}
	if again := drive(p, nil, nil); !slices.Equal(first, again) {
		t.Fatal("second run differs")
	}
}

func TestProgressDoesNotAllocate(t *testing.T) {
	for _, alg := range NewRegistry().Algorithms(AllReduce) {
		s, err := Build(Spec{Kind: AllReduce, Rank: 2, Size: 6, Counts: []int{4096}, ElemSize: 4, ChunkBytes: 256, Algorithm: alg})
		if err != nil {
			t.Fatal(err)
		}
		p := NewProgress(s)
		ready := make([]int, 0, len(s.Steps))
		order := make([]int, 0, len(s.Steps))
		allocs := testing.AllocsPerRun(20, func() {
			p.Reset()
			order = drive(p, ready[:0], order[:0])
			_ = p.Waiting(ready[:0])
		})
		if allocs != 0 || !p.Done() {
			t.Errorf("%s: %v allocations per run (done %v)", alg, allocs, p.Done())
		}
	}
}
