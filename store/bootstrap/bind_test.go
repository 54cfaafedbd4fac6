package bootstrap

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/tcpstore"
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

// hostOnFreePort hosts a job's store on a free loopback port, and returns
// the port and the store. A port freePort found may be taken again, by a
// store of a test running beside this one, before Connect binds it: then
// Connect joins that store instead of hosting, and another port is tried.
func hostOnFreePort(t *testing.T) (string, store.Store) {
	t.Helper()
	for range 10 {
		port := freePort(t)
		s, err := Connect(context.Background(), net.JoinHostPort("127.0.0.1", port), true, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, hosts := s.(*hosted); hosts {
			return port, s
		}
		s.Close()
	}
	t.Fatal("every free port found was taken again before it could be bound")
	return "", nil
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
		{master: "192.0.2.1", want: ""}, // TEST-NET-1, on no interface here
	} {
		lookup := func(name string) (string, bool) { return tc.bind, name == BindEnv && tc.bind != "" }
		got := ListenHost(ctx, tc.master, lookup)
		if got != tc.want && !(tc.want == "loopback" && net.ParseIP(got).IsLoopback()) {
			t.Errorf("ListenHost(%q) with %s=%q = %q, want %q", tc.master, BindEnv, tc.bind, got, tc.want)
		}
	}
}

// TestHostRefusesAnotherJobsStore: a rank 0 that finds its port taken
// joins a launcher's store but not one another job's rank 0 hosts, nor
// something that is no store; the error names the port and what answered.
func TestHostRefusesAnotherJobsStore(t *testing.T) {
	ctx := context.Background()
	port, other := hostOnFreePort(t)
	addr := net.JoinHostPort("127.0.0.1", port)
	_, err := Connect(ctx, addr, true, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "port "+port+" is taken by another job's store, hosted by ") {
		t.Errorf("joining another job's store: %v", err)
	}
	other.Close()

	launcher, err := tcpstore.Listen(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctx, addr, true, 10*time.Second)
	if err != nil {
		t.Errorf("joining a launcher's store: %v", err)
	} else {
		s.Close()
	}
	launcher.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // closes whatever connects: not a store
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			nc.Close()
		}
	}()
	_, err = Connect(ctx, addr, true, time.Second)
	if err == nil || !strings.Contains(err.Error(), "port "+port+" is taken by something that does not answer as a TCPStore") {
		t.Errorf("joining something that is no store: %v", err)
	}
}

// TestToken: with GOCOMMS_STORE_TOKEN set, the ranks that share it use the
// store rank 0 hosts, and a client without it cannot.
func TestToken(t *testing.T) {
	t.Setenv(TokenEnv, "job-secret")
	ctx := context.Background()
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	host, err := Connect(ctx, addr, true, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	peer, err := Connect(ctx, addr, false, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := peer.Add(ctx, "n", 1); err != nil {
		t.Error(err)
	}
	stray, err := tcpstore.Dial(ctx, addr, tcpstore.WithVersion(tcpstore.Version2), tcpstore.WithTimeout(time.Second))
	if err == nil {
		_, err = stray.Add(ctx, "n", 1)
		stray.Close()
	}
	if err == nil {
		t.Error("a client without the token was served")
	}
}
