package mux_test

import (
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
	"github.com/gocomms/gocomms/transport/transporttest"
)

var marker = transport.Header{Kind: mux.KindClose}

func markerFor(comm uint64) transport.Frame {
	h := marker
	h.Comm = comm
	return transport.Frame{Header: h}
}

// TestWireClose: data frames cross unchanged, Close adds one marker after
// them, and a conn the peer closed first sends none.
func TestWireClose(t *testing.T) {
	m, raw, wire := rawPeer(t)
	c := open(t, m, 5)
	if err := sendStream(c, 5, 0, 3); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
	got := wire.WaitFrames(t, 4)
	checkStream(t, got[:3], 5, 3)
	if h := got[3].Header; h != markerFor(5).Header || len(got[3].Payload) != 0 {
		t.Errorf("close marker is %+v with %d payload bytes, want %+v and none", h, len(got[3].Payload), markerFor(5).Header)
	}

	// The peer closes comm 6 first: the local conn learns of it, its Sends
	// fail, and its Close sends nothing.
	c6 := open(t, m, 6)
	r6 := transporttest.NewRecorder()
	c6.Start(r6)
	if err := raw.Send(markerFor(6)); err != nil {
		t.Fatal(err)
	}
	if _, err := r6.WaitError(t); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("comm 6 ended with %v, want ErrClosed", err)
	}
	if err := c6.Send(frame(6, 0)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after the peer's close: %v, want ErrClosed", err)
	}
	c6.Close()

	// A close for a comm not yet opened is kept for Open.
	if err := raw.Send(markerFor(8)); err != nil {
		t.Fatal(err)
	}
	r8 := transporttest.NewRecorder()
	c8 := open(t, m, 8)
	c8.Start(r8)
	if got, err := r8.WaitError(t); len(got) != 0 || !errors.Is(err, transport.ErrClosed) {
		t.Errorf("comm 8, closed before Open, gave %d frames and %v; want none and ErrClosed", len(got), err)
	}
	c8.Close()

	// Nothing was sent for comms 6 and 8: the next frame follows the marker.
	if err := sendStream(open(t, m, 9), 9, 0, 1); err != nil {
		t.Fatal(err)
	}
	checkStream(t, wire.WaitFrames(t, 5)[4:], 9, 1)
	wire.Check(t)
	r6.Check(t)
	r8.Check(t)
}

// TestLateFramesDropped: frames that a peer sent for a comm in a race with
// its close, from this end or its own, are dropped: nothing follows a
// comm's HandleError.
func TestLateFramesDropped(t *testing.T) {
	m, raw, wire := rawPeer(t)
	r1 := transporttest.NewRecorder()
	c1 := open(t, m, 1)
	c1.Start(r1)
	c1.Close()
	r2 := transporttest.NewRecorder()
	open(t, m, 2).Start(r2)
	for _, f := range []transport.Frame{frame(1, 0), frame(2, 0), markerFor(2), frame(2, 1), markerFor(3), frame(3, 0), frame(4, 0)} {
		if err := raw.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	r3 := transporttest.NewRecorder()
	open(t, m, 3).Start(r3)
	// Comm 4 was sent to last: once its frame is in, so are the others.
	r4 := transporttest.NewRecorder()
	open(t, m, 4).Start(r4)
	checkStream(t, r4.WaitFrames(t, 1), 4, 1)

	for i, want := range []int{0, 1, 0} {
		r := []*transporttest.Recorder{r1, r2, r3}[i]
		got, err := r.WaitError(t)
		checkStream(t, got, uint64(i+1), want)
		if !errors.Is(err, transport.ErrClosed) {
			t.Errorf("comm %d ended with %v, want ErrClosed", i+1, err)
		}
		r.Check(t)
	}
	if got := wire.WaitFrames(t, 1); len(got) != 1 || got[0].Header != markerFor(1).Header {
		t.Errorf("the wire carried %d frames, want only comm 1's marker", len(got))
	}
}
