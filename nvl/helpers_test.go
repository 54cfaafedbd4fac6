//go:build linux

package nvl

import (
	"context"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// pair connects a dialer and an acceptor of nw in this process, started
// with recorders, and closes both when the test ends.
func pair(t testing.TB, nw *Network) (d, a *conn, dr, ar *transporttest.Recorder) {
	t.Helper()
	d, a = connectPair(t, nw)
	dr, ar = transporttest.NewRecorder(), transporttest.NewRecorder()
	d.Start(dr)
	a.Start(ar)
	return d, a, dr, ar
}

// connectPair connects a dialer and an acceptor of nw in this process,
// not started, and closes both when the test ends.
func connectPair(t testing.TB, nw *Network) (d, a *conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dc, err := nw.Dial(ctx, l.Addr(), []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	ac, _, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dc.Close()
		ac.Close()
		<-dc.(*conn).Drained()
		<-ac.(*conn).Drained()
	})
	return dc.(*conn), ac.(*conn)
}

func testHeader(i int) transport.Header {
	return transport.Header{Comm: 7, Kind: transport.Collective, Seq: uint64(i), Tag: uint32(i), Sig: 99}
}
