package mux_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// waitTimeout bounds every wait; it only matters when something is lost.
const waitTimeout = 10 * time.Second

// inprocPair returns the two ends of a fresh in-process connection, both
// closed after t.
func inprocPair(t testing.TB) (dialer, acceptor transport.Conn) {
	t.Helper()
	nw := transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialer, err = nw.Dial(context.Background(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	acceptor, _, err = l.Accept(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialer.Close(); acceptor.Close() })
	return dialer, acceptor
}

// muxPair returns muxes at both ends of a fresh in-process connection,
// closed after t.
func muxPair(t testing.TB, opts ...mux.Option) (a, b *mux.Mux) {
	t.Helper()
	ca, cb := inprocPair(t)
	a, b = mux.New(ca, opts...), mux.New(cb, opts...)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// rawPeer returns a mux over one end of a fresh in-process connection and
// the other end, plain and started, so that a test can see the wire and
// send on it whatever it likes.
func rawPeer(t testing.TB, opts ...mux.Option) (*mux.Mux, transport.Conn, *transporttest.Recorder) {
	t.Helper()
	ca, cb := inprocPair(t)
	m := mux.New(ca, opts...)
	t.Cleanup(func() { m.Close() })
	r := transporttest.NewRecorder()
	cb.Start(r)
	return m, cb, r
}

// open opens comm on m, fails t if it cannot, and closes the conn after t.
func open(t testing.TB, m *mux.Mux, comm uint64) transport.Conn {
	t.Helper()
	c, err := m.Open(comm)
	if err != nil {
		t.Fatalf("Open(%#x): %v", comm, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// frame is frame i of comm's stream: Seq i and an 8-byte payload holding
// comm^i, so that a frame delivered to the wrong comm or out of order
// shows.
func frame(comm uint64, i int) transport.Frame {
	p := transport.GetBuffer(8)
	binary.LittleEndian.PutUint64(p, comm^uint64(i))
	return transport.Frame{Header: transport.Header{Comm: comm, Kind: transport.Collective, Seq: uint64(i)}, Payload: p}
}

func sendStream(c transport.Conn, comm uint64, from, to int) error {
	for i := from; i < to; i++ {
		if err := c.Send(frame(comm, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkStream checks that got is frames 0..n-1 of comm's stream.
func checkStream(t testing.TB, got []transport.Frame, comm uint64, n int) {
	t.Helper()
	if len(got) != n {
		t.Errorf("comm %#x: got %d frames, want %d", comm, len(got), n)
	}
	for i, f := range got[:min(n, len(got))] {
		if f.Header.Comm != comm || f.Header.Seq != uint64(i) || len(f.Payload) != 8 || binary.LittleEndian.Uint64(f.Payload) != comm^uint64(i) {
			t.Fatalf("comm %#x: frame %d is comm %#x seq %d payload %x", comm, i, f.Header.Comm, f.Header.Seq, f.Payload)
		}
	}
}
