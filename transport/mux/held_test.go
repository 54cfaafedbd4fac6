package mux_test

import (
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// heldFrame is a frame for comm with an n-byte payload.
func heldFrame(comm uint64, n int) transport.Frame {
	return transport.Frame{Header: transport.Header{Comm: comm, Kind: transport.Collective}, Payload: transport.GetBuffer(n)}
}

// TestHeldLimit: a frame that would take what is held for unopened comms
// over the limit fails the whole mux and closes the connection; what was
// held is still delivered, before the error.
func TestHeldLimit(t *testing.T) {
	m, raw, wire := rawPeer(t, mux.WithMaxHeld(1<<20))
	r1 := transporttest.NewRecorder()
	c1 := open(t, m, 1)
	c1.Start(r1)
	// Two frames of 400 KiB held for comms 2 and 3, and a little
	// overhead: within the limit. Comm 1's frame is delivered, not held.
	for _, f := range []transport.Frame{heldFrame(1, 2<<20), heldFrame(2, 400<<10), heldFrame(3, 400<<10)} {
		if err := raw.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	r1.WaitFrames(t, 1)
	if _, errs := r1.Snapshot(); len(errs) > 0 {
		t.Fatalf("mux failed within the limit: %v", errs[0])
	}
	raw.Send(heldFrame(2, 300<<10))

	_, err := r1.WaitError(t)
	if !errors.Is(err, mux.ErrHeldLimit) || !errors.Is(err, transport.ErrClosed) {
		t.Errorf("open comm ended with %v, want ErrHeldLimit and ErrClosed", err)
	}
	if _, err := wire.WaitError(t); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("peer's connection ended with %v, want ErrClosed", err)
	}
	if err := c1.Send(frame(1, 0)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after the failure: %v, want ErrClosed", err)
	}
	r2 := transporttest.NewRecorder()
	open(t, m, 2).Start(r2)
	got, err := r2.WaitError(t)
	if len(got) != 1 || len(got[0].Payload) != 400<<10 || !errors.Is(err, mux.ErrHeldLimit) {
		t.Errorf("comm 2 opened after the failure gave %d frames and %v; want its held frame and ErrHeldLimit", len(got), err)
	}
	r1.Check(t)
	r2.Check(t)
}

// TestHeldFreedByOpen: what Open takes no longer counts against the limit,
// even before Start.
func TestHeldFreedByOpen(t *testing.T) {
	m, raw, _ := rawPeer(t, mux.WithMaxHeld(1<<20))
	send := func(comm uint64) {
		t.Helper()
		for range 2 {
			if err := raw.Send(heldFrame(comm, 400<<10)); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(2)
	c2 := open(t, m, 2)
	send(3)
	c3 := open(t, m, 3)
	for _, c := range []transport.Conn{c2, c3} {
		r := transporttest.NewRecorder()
		c.Start(r)
		r.WaitFrames(t, 2)
		if _, errs := r.Snapshot(); len(errs) > 0 {
			t.Errorf("comm ended: %v", errs[0])
		}
		r.Check(t)
	}
}
