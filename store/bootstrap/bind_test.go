package bootstrap

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

// freePort returns a port nothing listens on at the moment.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestHostBindsLoopback: rank 0 with MASTER_ADDR=127.0.0.1 serves the store
// on loopback only, not on every interface.
func TestHostBindsLoopback(t *testing.T) {
	ctx := context.Background()
	s, err := Connect(ctx, net.JoinHostPort("127.0.0.1", freePort(t)), true, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, ok := s.(*hosted)
	if !ok {
		t.Fatalf("rank 0 did not host the store: %T", s)
	}
	if ip := h.srv.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf("the store listens on %v, want loopback", h.srv.Addr())
	}
}

func TestListenHost(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ master, bind, want string }{
		{master: "127.0.0.1", want: "127.0.0.1"},
		{master: "::1", want: "::1"},
		{master: "localhost", want: "loopback"},
		{master: "127.0.0.1", bind: "0.0.0.0", want: "0.0.0.0"},
		{master: "no-such-host.invalid", want: ""},
	} {
		lookup := func(name string) (string, bool) { return tc.bind, name == BindEnv && tc.bind != "" }
		got := ListenHost(ctx, tc.master, lookup)
		if got != tc.want && !(tc.want == "loopback" && net.ParseIP(got).IsLoopback()) {
			t.Errorf("ListenHost(%q) with %s=%q = %q, want %q", tc.master, BindEnv, tc.bind, got, tc.want)
		}
	}
}
