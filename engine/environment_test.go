package engine

import (
	"errors"
	"net"
	"testing"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/topo"
)

// TestEnvNetwork checks the network each GOCOMMS_TRANSPORT value gives,
// and that a malformed variable is an error naming it.
func TestEnvNetwork(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "auto"},
		{[]string{"GOCOMMS_TRANSPORT", "auto", "GOCOMMS_SHM_SPIN", "0s"}, "auto"},
		{[]string{"GOCOMMS_TRANSPORT", "shm", "GOCOMMS_SHM_BY_ADDRESS", "0"}, "shm"},
		{[]string{"GOCOMMS_TRANSPORT", "tcp", "GOCOMMS_PORT_RANGE", "29500-29600", "GOCOMMS_TCP_CHECKSUMS", "always"}, "tcp"},
	} {
		nw, err := envNetwork(env(tc.env...))
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		var got string
		switch nw.(type) {
		case *topo.Network:
			got = "auto"
		case *nvl.Network:
			got = "shm"
		case *tcp.Network:
			got = "tcp"
			if tc.want == "auto" && nvl.Host() == "" {
				got = "auto" // no shared memory on this machine
			}
		}
		if got != tc.want {
			t.Errorf("%v: got a %T, want %s", tc.env, nw, tc.want)
		}
	}
	for _, bad := range [][]string{
		{"GOCOMMS_TRANSPORT", "infiniband"},
		{"GOCOMMS_SHM_SPIN", "fast"},
		{"GOCOMMS_SHM_BY_ADDRESS", "-1"},
		{"GOCOMMS_PORT_RANGE", "9-1"},
		{"GOCOMMS_TCP_CHECKSUMS", "sometimes"},
	} {
		if _, err := envNetwork(env(bad...)); !errors.Is(err, commerr.ErrInvalidArgument) {
			t.Errorf("%s=%q: %v, want commerr.ErrInvalidArgument", bad[0], bad[1], err)
		}
	}
}

// TestEnvSocketIfname checks that GOCOMMS_SOCKET_IFNAME picks the address
// TCP listens on and advertises.
func TestEnvSocketIfname(t *testing.T) {
	ch, err := tcp.ChooseHost("=lo")
	if err != nil {
		t.Skipf("no interface called lo: %v", err)
	}
	env := map[string]string{"GOCOMMS_TRANSPORT": "tcp", "GOCOMMS_SOCKET_IFNAME": "=lo"}
	nw, err := envNetwork(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if host, _, _ := net.SplitHostPort(l.Addr()); host != ch.IP.String() {
		t.Errorf("GOCOMMS_SOCKET_IFNAME==lo: listening at %s, want host %s", l.Addr(), ch.IP)
	}
}
