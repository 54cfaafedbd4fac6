package transporttest

import (
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// testCloseNotifiesPeer: whichever end closes, the other end's handler gets
// every frame sent before the close, then exactly one error.
func testCloseNotifiesPeer(t *testing.T, nw transport.Network) {
	const n = 1000
	for _, closer := range []string{"dialer", "acceptor"} {
		t.Run("by "+closer, func(t *testing.T) {
			d, a := connect(t, nw)
			if closer == "acceptor" {
				d, a = a, d
			}
			// d closes, a is notified.
			rd, ra := NewRecorder(), NewRecorder()
			d.Start(rd)
			a.Start(ra)
			if err := sendStream(d, 1, n); err != nil {
				t.Fatalf("Send: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			_, err := ra.WaitError(t)
			if !errors.Is(err, transport.ErrClosed) {
				t.Errorf("peer's HandleError got %v, want ErrClosed", err)
			}
			got, _ := ra.Snapshot()
			checkStream(t, got, 1, n)

			// Closing the notified end must not notify it again.
			if err := a.Close(); err != nil {
				t.Errorf("peer Close: %v", err)
			}
			ra.Check(t)
			rd.Check(t)
		})
	}
}

// testCloseBeforeStart: frames and the close that arrived before Start are
// delivered by Start, in order.
func testCloseBeforeStart(t *testing.T, nw transport.Network) {
	const n = 100
	d, a := connect(t, nw)
	if err := sendStream(d, 1, n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	d.Close()
	r := NewRecorder()
	a.Start(r)
	if _, err := r.WaitError(t); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("HandleError got %v, want ErrClosed", err)
	}
	got, _ := r.Snapshot()
	checkStream(t, got, 1, n)
	r.Check(t)
}

// testCloseFromHandler: a handler may close its own connection when a frame
// tells it to; the peer is notified after the frames before it.
func testCloseFromHandler(t *testing.T, nw transport.Network) {
	d, a := connect(t, nw)
	rd, ra := NewRecorder(), NewRecorder()
	ra.Reply = func(f transport.Frame) error {
		if f.Header.Seq == 9 {
			return a.Close()
		}
		return a.Send(frame(2, int(f.Header.Seq)))
	}
	d.Start(rd)
	a.Start(ra)
	for i := range 10 {
		if err := d.Send(frame(1, i)); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if _, err := rd.WaitError(t); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("dialer's HandleError got %v, want ErrClosed", err)
	}
	got, _ := rd.Snapshot()
	checkStream(t, got, 2, 9)
	gotA, _ := ra.Snapshot()
	checkStream(t, gotA, 1, 10)
	rd.Check(t)
	ra.Check(t)
}

// testSendAfterClose: Send fails after the local Close, and after the peer's
// close has been reported.
func testSendAfterClose(t *testing.T, nw transport.Network) {
	d, a := connect(t, nw)
	ra := NewRecorder()
	a.Start(ra)
	d.Close()
	if err := d.Send(frame(1, 0)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after Close returned %v, want ErrClosed", err)
	}
	ra.WaitError(t)
	if err := a.Send(frame(2, 0)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after the peer closed returned %v, want ErrClosed", err)
	}
	ra.Check(t)
}
