package flight

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
)

// work is a Work that has ended when err is set.
type work struct {
	ended bool
	err   error
}

func (w *work) Ended() (bool, error) { return w.ended, w.err }

func TestRecorderKeepsTheLastEntries(t *testing.T) {
	r := NewRecorder(2)
	for seq := range 3 {
		r.Add(&backend.Op{Name: "barrier", Seq: uint64(seq), Root: -1}, &work{})
	}
	entries, dropped := r.Snapshot()
	if len(entries) != 2 || entries[0].Seq != 1 || entries[1].Seq != 2 || dropped != 1 {
		t.Fatalf("entries %+v, dropped %d; want seqs 1 and 2, 1 dropped", entries, dropped)
	}
	if _, ok := NewRecorder(0).Add(&backend.Op{}, &work{}); ok {
		t.Error("a recorder of capacity 0 recorded an operation")
	}
}

// TestRecorderStates follows operations to each end, the one whose End
// has not come included: a snapshot reads its Work.
func TestRecorderStates(t *testing.T) {
	r := NewRecorder(8)
	for _, c := range []struct {
		err  error
		want State
	}{
		{nil, Completed},
		{commerr.ErrTimeout, TimedOut},
		{fmt.Errorf("%w: gone", commerr.ErrAborted), Aborted},
		{&commerr.OpError{Ranks: []int{3}, Err: errors.New("boom")}, Failed},
	} {
		w := &work{}
		k, _ := r.Add(&backend.Op{Name: "all_reduce", Root: -1}, w)
		r.Start(k, false)
		if e, _ := r.Snapshot(); e[len(e)-1].State != Started || e[len(e)-1].Started.IsZero() {
			t.Fatalf("started: %+v", e[len(e)-1])
		}
		w.ended, w.err = true, c.err
		e, _ := r.Snapshot()
		if got := e[len(e)-1]; got.State != c.want || got.Ended.IsZero() {
			t.Errorf("ended with %v: %+v, want %s", c.err, got, c.want)
		}
	}
	if e, _ := r.Snapshot(); e[3].Error == "" || len(e[3].ErrorRanks) != 1 || e[3].ErrorRanks[0] != 3 {
		t.Errorf("the failure's entry does not name its rank: %+v", e[3])
	}
	k, _ := r.Add(&backend.Op{Name: "send", Root: -1}, &work{})
	r.Start(k, true)
	if e, _ := r.Snapshot(); e[4].Started != e[4].Issued {
		t.Errorf("started while issued: %+v", e[4])
	}
}
