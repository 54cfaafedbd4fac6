package topo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/topo"
	"github.com/gocomms/gocomms/transport/transporttest"
)

func newNetwork(t *testing.T, local, remote transport.Network) transport.Network {
	nw, err := topo.New(local, remote, nvl.Reachable)
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Network {
		return newNetwork(t, nvl.New(), tcp.New(tcp.WithListenHost("127.0.0.1")))
	})
}

func TestConformanceRemoteOnly(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Network {
		return newNetwork(t, nil, tcp.New(tcp.WithListenHost("127.0.0.1")))
	})
}

// TestPicksByHost dials a listener of both networks: a peer on this host
// is reached through shared memory, and one whose local part names
// another host through TCP.
func TestPicksByHost(t *testing.T) {
	nw := newNetwork(t, nvl.New(), tcp.New(tcp.WithListenHost("127.0.0.1")))
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	remote, local, ok := strings.Cut(l.Addr(), "|")
	if !ok || !strings.HasPrefix(local, "nvl:") || !strings.HasPrefix(remote, "127.0.0.1:") {
		t.Fatalf("listener address %q, want TCP|nvl", l.Addr())
	}
	elsewhere := remote + "|nvl:0000.1/" + strings.SplitN(local, "/", 2)[1]
	for _, tc := range []struct{ addr, want string }{{l.Addr(), "nvl:"}, {elsewhere, "127.0.0.1:"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d, err := nw.Dial(ctx, tc.addr, []byte("hi"))
		if err != nil {
			t.Fatal(err)
		}
		a, hello, err := l.Accept(ctx)
		cancel()
		if err != nil || string(hello) != "hi" {
			t.Fatalf("accept: %v, hello %q", err, hello)
		}
		if !strings.HasPrefix(d.RemoteAddr(), tc.want) {
			t.Errorf("dialling %q went to %q, want %s...", tc.addr, d.RemoteAddr(), tc.want)
		}
		d.Close()
		a.Close()
	}
}
