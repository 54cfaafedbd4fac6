package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// testContext bounds a test's blocking calls.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// listen listens at a fresh address and closes the listener after t.
func listen(t testing.TB, nw transport.Network) transport.Listener {
	t.Helper()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatalf("Listen(\"\"): %v", err)
	}
	if l.Addr() == "" {
		t.Fatal("Listen(\"\") returned a listener with an empty Addr")
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialAccept dials l and accepts the connection concurrently (a transport
// may complete Dial only once the acceptor answers). Both ends are closed
// after t.
func dialAccept(t testing.TB, nw transport.Network, l transport.Listener, hello []byte) (dialer, acceptor transport.Conn, gotHello []byte) {
	t.Helper()
	ctx := testContext(t)
	type accepted struct {
		conn  transport.Conn
		hello []byte
		err   error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, h, err := l.Accept(ctx)
		ch <- accepted{c, h, err}
	}()
	dialer, err := nw.Dial(ctx, l.Addr(), hello)
	if err != nil {
		// Stop the pending Accept before failing, so it does not leak.
		l.Close()
		<-ch
		t.Fatalf("Dial(%q): %v", l.Addr(), err)
	}
	t.Cleanup(func() { dialer.Close() })
	a := <-ch
	if a.err != nil {
		t.Fatalf("Accept on %q: %v", l.Addr(), a.err)
	}
	t.Cleanup(func() { a.conn.Close() })
	return dialer, a.conn, a.hello
}

// connect returns the two ends of a fresh connection on nw.
func connect(t testing.TB, nw transport.Network) (dialer, acceptor transport.Conn) {
	t.Helper()
	dialer, acceptor, _ = dialAccept(t, nw, listen(t, nw), nil)
	return dialer, acceptor
}

// frame builds frame i of stream id: every header field and the payload
// (length i%97, contents derived from id and i) are distinct enough that a
// reordered, duplicated or corrupted frame cannot pass check.
func frame(id uint64, i int) transport.Frame {
	return transport.Frame{Header: header(id, i), Payload: pattern(i%97, id<<32|uint64(i))}
}

func header(id uint64, i int) transport.Header {
	return transport.Header{
		Comm: id,
		Kind: transport.Kind(i%3) + transport.Collective,
		Seq:  uint64(i),
		Tag:  uint32(i) * 2654435761,
		Sig:  (uint64(i) + id<<40) * 0x9E3779B97F4A7C15,
	}
}

// pattern returns a pooled payload of n bytes whose contents depend on seed
// and on each byte's position.
func pattern(n int, seed uint64) []byte {
	b := transport.GetBuffer(n)
	fill(b, seed)
	return b
}

func fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 | 1
	for i := range b {
		// xorshift: cheap enough for 8 MiB, and no two positions agree by
		// construction of a shifted copy.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

// checkStream checks that got is frames 0..n-1 of stream id, in order.
func checkStream(t testing.TB, got []transport.Frame, id uint64, n int) {
	t.Helper()
	if len(got) != n {
		t.Errorf("stream %d: got %d frames, want %d", id, len(got), n)
	}
	for i, f := range got[:min(n, len(got))] {
		want := frame(id, i)
		if f.Header != want.Header {
			t.Fatalf("stream %d: frame %d has header %+v, want %+v", id, i, f.Header, want.Header)
		}
		if !bytes.Equal(f.Payload, want.Payload) {
			t.Fatalf("stream %d: frame %d has a payload of %d bytes that differs from the %d sent", id, i, len(f.Payload), len(want.Payload))
		}
		transport.PutBuffer(want.Payload)
	}
}

// sendStream sends frames 0..n-1 of stream id on c.
func sendStream(c transport.Conn, id uint64, n int) error {
	for i := range n {
		if err := c.Send(frame(id, i)); err != nil {
			return err
		}
	}
	return nil
}

// seqPayload is an 8-byte pooled payload holding seq.
func seqPayload(seq uint64) []byte {
	b := transport.GetBuffer(8)
	binary.LittleEndian.PutUint64(b, seq)
	return b
}
