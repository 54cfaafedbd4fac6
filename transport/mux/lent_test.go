package mux_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// tcpPair returns the two ends of a fresh loopback TCP connection, both
// closed after t.
func tcpPair(t testing.TB) (dialer, acceptor transport.Conn) {
	t.Helper()
	nw := tcp.New(tcp.WithListenHost("127.0.0.1"))
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialer, err = nw.Dial(t.Context(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	acceptor, _, err = l.Accept(t.Context())
	if err != nil {
		dialer.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { dialer.Close(); acceptor.Close() })
	return dialer, acceptor
}

// TestLentPayloads: a lent payload's Sent is called exactly once whether
// the Send succeeds or fails, and on every way it can fail.
func TestLentPayloads(t *testing.T) {
	for _, nw := range []struct {
		name string
		pair func(testing.TB) (transport.Conn, transport.Conn)
	}{{"inproc", inprocPair}, {"tcp", tcpPair}} {
		t.Run(nw.name, func(t *testing.T) {
			ca, cb := nw.pair(t)
			a, b := mux.New(ca), mux.New(cb)
			t.Cleanup(func() { a.Close(); b.Close() })

			var calls []*atomic.Int32
			returned := make(chan struct{}, 16)
			lend := func(h transport.Header) transport.Frame {
				n := new(atomic.Int32)
				calls = append(calls, n)
				return transport.Frame{Header: h, Payload: []byte("lent"), Sent: func() {
					n.Add(1)
					returned <- struct{}{}
				}}
			}
			c1, c2 := open(t, a, 1), open(t, a, 2)
			r := transporttest.NewRecorder()
			open(t, b, 1).Start(r)

			if err := c1.Send(lend(transport.Header{Comm: 1, Kind: transport.PointToPoint})); err != nil {
				t.Errorf("Send: %v", err)
			}
			if got := r.WaitFrames(t, 1); !bytes.Equal(got[0].Payload, []byte("lent")) {
				t.Errorf("lent payload arrived as %q", got[0].Payload)
			}
			if err := c1.Send(lend(transport.Header{Comm: 2, Kind: transport.PointToPoint})); err == nil {
				t.Error("Send with another comm's header succeeded")
			}
			c1.Close()
			if err := c1.Send(lend(transport.Header{Comm: 1})); err == nil {
				t.Error("Send after Close succeeded")
			}
			a.Close()
			if err := c2.Send(lend(transport.Header{Comm: 2})); err == nil {
				t.Error("Send after the mux closed succeeded")
			}
			// b's connection has failed, or is about to.
			late := open(t, b, 3)
			lr := transporttest.NewRecorder()
			late.Start(lr)
			lr.WaitError(t)
			if err := late.Send(lend(transport.Header{Comm: 3})); err == nil {
				t.Error("Send after the connection failed succeeded")
			}

			// tcp calls Sent from its writer, once the bytes are written.
			timer := time.NewTimer(waitTimeout)
			defer timer.Stop()
			for range calls {
				select {
				case <-returned:
				case <-timer.C:
					t.Fatal("timed out waiting for Sent")
				}
			}
			for i, n := range calls {
				if got := n.Load(); got != 1 {
					t.Errorf("frame %d: Sent called %d times, want once", i, got)
				}
			}
		})
	}
}

// TestBorrower: a virtual conn borrows lent payloads exactly when its
// underlying conn does.
func TestBorrower(t *testing.T) {
	for _, nw := range []struct {
		name string
		pair func(testing.TB) (transport.Conn, transport.Conn)
	}{{"inproc", inprocPair}, {"tcp", tcpPair}} {
		t.Run(nw.name, func(t *testing.T) {
			under, _ := nw.pair(t)
			_, want := under.(transport.Borrower)
			m := mux.New(under)
			t.Cleanup(func() { m.Close() })
			if _, got := open(t, m, 1).(transport.Borrower); got != want {
				t.Errorf("virtual conn is a Borrower: %v; its underlying conn: %v", got, want)
			}
		})
	}
}
