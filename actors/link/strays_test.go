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
func (nopSink) Broke(int, error)             {}

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
