package transporttest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

func testDialAccept(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	hello := []byte("rank 3 of comm 42")
	d, a, got := dialAccept(t, nw, l, hello)
	want := bytes.Clone(hello)
	hello[0] = 'X' // the transport must have copied or sent it by now
	if !bytes.Equal(got, want) {
		t.Errorf("acceptor got hello %q, want %q", got, want)
	}
	if d.LocalAddr() == "" || d.RemoteAddr() == "" {
		t.Errorf("dialer addresses %q -> %q: want both set", d.LocalAddr(), d.RemoteAddr())
	}
	if d.LocalAddr() != a.RemoteAddr() || d.RemoteAddr() != a.LocalAddr() {
		t.Errorf("dialer %q -> %q and acceptor %q -> %q do not mirror each other",
			d.LocalAddr(), d.RemoteAddr(), a.LocalAddr(), a.RemoteAddr())
	}

	// The connection works both ways.
	rd, ra := NewRecorder(), NewRecorder()
	d.Start(rd)
	a.Start(ra)
	if err := d.Send(frame(1, 0)); err != nil {
		t.Fatalf("dialer Send: %v", err)
	}
	if err := a.Send(frame(2, 0)); err != nil {
		t.Fatalf("acceptor Send: %v", err)
	}
	checkStream(t, ra.WaitFrames(t, 1), 1, 1)
	checkStream(t, rd.WaitFrames(t, 1), 2, 1)
	rd.Check(t)
	ra.Check(t)

	// A second connection to the same listener, with no hello.
	_, _, got = dialAccept(t, nw, l, nil)
	if len(got) != 0 {
		t.Errorf("acceptor got hello %q, want none", got)
	}
}

func testHelloLimit(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	hello := make([]byte, transport.MaxHello)
	fill(hello, 7)
	_, _, got := dialAccept(t, nw, l, hello)
	if !bytes.Equal(got, hello) {
		t.Errorf("a hello of MaxHello bytes arrived as %d bytes, or changed", len(got))
	}
	c, err := nw.Dial(testContext(t), l.Addr(), make([]byte, transport.MaxHello+1))
	if err == nil {
		c.Close()
		t.Error("Dial with a hello over MaxHello succeeded")
	}
}

func testListenTaken(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	l2, err := nw.Listen(l.Addr())
	if err == nil {
		l2.Close()
		t.Fatalf("second Listen(%q) succeeded", l.Addr())
	}
	l3 := listen(t, nw)
	if l3.Addr() == l.Addr() {
		t.Errorf("two Listen(\"\") returned the same address %q", l.Addr())
	}
}

func testDialNothing(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	addr := l.Addr()
	l.Close()
	if c, err := nw.Dial(testContext(t), addr, nil); err == nil {
		c.Close()
		t.Errorf("Dial(%q) after the listener closed succeeded", addr)
	}

	live := listen(t, nw)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if c, err := nw.Dial(ctx, live.Addr(), nil); err == nil {
		c.Close()
		t.Error("Dial with a cancelled context succeeded")
	}
}

func testAcceptCancelled(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		c, _, err := l.Accept(ctx)
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Accept after cancel returned %v, want context.Canceled", err)
	}

	// The listener still works after an abandoned Accept.
	dialAccept(t, nw, l, nil)
}

func testListenerClose(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	errc := make(chan error, 1)
	go func() {
		c, _, err := l.Accept(testContext(t))
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-errc; !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Accept blocked across Close returned %v, want ErrClosed", err)
	}
	if _, _, err := l.Accept(testContext(t)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Accept after Close returned %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// testListenerCloseDropsBacklog: a connection dialled but never accepted
// must not hang its dialer when the listener closes.
func testListenerCloseDropsBacklog(t *testing.T, nw transport.Network) {
	l := listen(t, nw)
	type dialed struct {
		c   transport.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		c, err := nw.Dial(testContext(t), l.Addr(), []byte("never accepted"))
		ch <- dialed{c, err}
	}()
	l.Close()
	d := <-ch
	if d.err != nil {
		return // refused outright: fine
	}
	defer d.c.Close()
	r := NewRecorder()
	d.c.Start(r)
	r.WaitError(t) // any error: the transport decides how the failure reads
	r.Check(t)
}
