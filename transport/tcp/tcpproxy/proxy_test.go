package tcpproxy_test

import (
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/tcp/tcpproxy"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// TestResetAbortsBothEnds: frames and the hello cross the proxy
// unchanged; Reset aborts the connection at both ends, which see
// ErrClosed; a later dial goes through again.
func TestResetAbortsBothEnds(t *testing.T) {
	nw := tcpproxy.New(tcp.New(tcp.WithListenHost("127.0.0.1")))
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dial := func() (transport.Conn, transport.Conn, *transporttest.Recorder, *transporttest.Recorder) {
		a, err := nw.Dial(t.Context(), l.Addr(), []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		b, hello, err := l.Accept(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if string(hello) != "hello" {
			t.Fatalf("hello %q through the proxy", hello)
		}
		ra, rb := transporttest.NewRecorder(), transporttest.NewRecorder()
		a.Start(ra)
		b.Start(rb)
		return a, b, ra, rb
	}
	a, b, ra, rb := dial()
	if err := a.Send(transport.Frame{Header: transport.Header{Kind: transport.Collective, Seq: 7}, Payload: []byte("payload")}); err != nil {
		t.Fatal(err)
	}
	if f := rb.WaitFrames(t, 1)[0]; f.Header.Seq != 7 || string(f.Payload) != "payload" {
		t.Fatalf("got %+v %q through the proxy", f.Header, f.Payload)
	}
	if n := nw.Reset(); n != 1 {
		t.Fatalf("Reset aborted %d connections, want 1", n)
	}
	for name, r := range map[string]*transporttest.Recorder{"dialer": ra, "acceptor": rb} {
		if _, err := r.WaitError(t); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("%s: ended with %v, want ErrClosed", name, err)
		}
	}
	a.Close()
	b.Close()

	a, b, _, rb = dial()
	defer a.Close()
	defer b.Close()
	if err := a.Send(transport.Frame{Header: transport.Header{Kind: transport.Collective, Seq: 8}}); err != nil {
		t.Fatal(err)
	}
	if f := rb.WaitFrames(t, 1)[0]; f.Header.Seq != 8 {
		t.Fatalf("after the reset, got %+v", f.Header)
	}
}
