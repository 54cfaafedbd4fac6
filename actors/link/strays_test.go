package link

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

type nopSink struct{}

func (nopSink) Deliver(int, transport.Frame) {}
func (nopSink) Failed(int, error)            {}

// TestStraysAnswersFramesNoStepTakes: a frame of the running collective
// on a plane it did not attach to is answered, whether it came before the
// collective started or after; one of a collective that ended is answered
// with the failure report, if it failed; a frame of a later collective,
// or of one that failed with no report, waits or goes unanswered.
func TestStraysAnswersFramesNoStepTakes(t *testing.T) {
	var got []string
	s := &Strays{Report: func(peer int, h transport.Header, ours uint64, failure []byte) {
		got = append(got, fmt.Sprintf("peer %d seq %d sig %x ours %x failure %q", peer, h.Seq, h.Sig, ours, failure))
	}}
	frame := func(seq, sig uint64) transport.Frame {
		return transport.Frame{Header: transport.Header{Kind: transport.Collective, Seq: seq, Sig: sig}}
	}
	used, other := s.NewPlane(1), s.NewPlane(2)
	other.arrive(frame(5, 0xb)) // before collective 5 starts here
	other.arrive(frame(6, 0xc)) // a later collective's: it waits
	if _, err := used.Attach(5, nopSink{}, nil); err != nil {
		t.Fatal(err)
	}
	s.Started(5, 0xa)
	used.arrive(frame(5, 0xa)) // taken by the collective
	other.arrive(frame(5, 0xb))
	s.Ended(5, 0xa, false, []byte("report"))
	used.Detach(nopSink{})
	other.arrive(frame(5, 0xb))
	s.Started(7, 0xd)
	s.Ended(7, 0xd, false, nil) // failed unreported: its strays go unanswered
	other.arrive(frame(7, 0xd))
	want := []string{
		`peer 2 seq 5 sig b ours a failure ""`,
		`peer 2 seq 5 sig b ours a failure ""`,
		`peer 2 seq 5 sig b ours a failure "report"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("answered %q, want %q", got, want)
	}
	if len(other.early) != 2 || other.early[0].Header.Seq != 6 || other.early[1].Header.Seq != 7 {
		t.Fatalf("plane keeps %v, want the frames of collectives 6 and 7", other.early)
	}
}

// TestStraysWalkOnlyPlanesThatKeepFrames: a plane that kept an early
// frame leaves the planes a collective's start and end walk once it keeps
// none, whether its collective took the frame or it was answered.
func TestStraysWalkOnlyPlanesThatKeepFrames(t *testing.T) {
	s := &Strays{Report: func(int, transport.Header, uint64, []byte) {}}
	frame := func(seq uint64) transport.Frame {
		return transport.Frame{Header: transport.Header{Kind: transport.Collective, Seq: seq}}
	}
	planes := []*Plane{s.NewPlane(1), s.NewPlane(2), s.NewPlane(3)}
	for _, p := range planes {
		p.arrive(frame(4)) // peers ran ahead into collective 4
	}
	planes[2].arrive(frame(5))
	if len(s.holding) != 3 {
		t.Fatalf("%d planes held, want 3", len(s.holding))
	}
	for _, p := range planes[:2] { // collective 4 hears from peers 1 and 2
		if _, err := p.Attach(4, nopSink{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.holding) != 1 || s.holding[0] != planes[2] {
		t.Fatalf("after the collective took their frames, %d planes held, want plane 3 alone", len(s.holding))
	}
	s.Started(4, 0) // plane 3's frame of 4 is a stray: answered; that of 5 waits
	if len(s.holding) != 1 || len(planes[2].early) != 1 {
		t.Fatalf("plane 3 keeps %d frames, %d planes held; want its frame of 5, itself", len(planes[2].early), len(s.holding))
	}
	if _, err := planes[2].Attach(5, nopSink{}, nil); err != nil {
		t.Fatal(err)
	}
	if len(s.holding) != 0 {
		t.Fatalf("%d planes held, none keeping a frame", len(s.holding))
	}
}
