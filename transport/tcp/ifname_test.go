package tcp

import (
	"errors"
	"net"
	"slices"
	"testing"
)

func TestIfnamesMatch(t *testing.T) {
	names := []string{"eth0", "eth10", "ens3", "ib0", "docker0", "lo", "veth1"}
	for _, tc := range []struct {
		spec  string
		match []string // of names, in order
	}{
		{"", names}, // no list allows everything; Choose's default decides
		{"eth", []string{"eth0", "eth10"}},
		{"eth,ib", []string{"eth0", "eth10", "ib0"}},
		{" eth , ,ib ", []string{"eth0", "eth10", "ib0"}},
		{"=eth0", []string{"eth0"}},
		{"=eth1", nil},
		{"=eth0,lo", []string{"eth0", "lo"}},
		{"^docker,lo", []string{"eth0", "eth10", "ens3", "ib0", "veth1"}},
		{"^eth", []string{"ens3", "ib0", "docker0", "lo", "veth1"}},
		{"^=eth0", []string{"eth10", "ens3", "ib0", "docker0", "lo", "veth1"}},
		{"^=eth", names},
		{"e", []string{"eth0", "eth10", "ens3"}},
		{"veth", []string{"veth1"}},
	} {
		f := ParseIfnames(tc.spec)
		var got []string
		for _, n := range names {
			if f.Match(n) {
				got = append(got, n)
			}
		}
		if len(tc.match) == 0 && len(got) == 0 {
			continue
		}
		if !slices.Equal(got, tc.match) {
			t.Errorf("%q matches %v, want %v", tc.spec, got, tc.match)
		}
	}
}

func TestChoose(t *testing.T) {
	ip := net.ParseIP
	lo := Interface{Name: "lo", Up: true, Loopback: true, Addrs: []net.IP{ip("127.0.0.1"), ip("::1")}}
	docker := Interface{Name: "docker0", Up: true, Addrs: []net.IP{ip("172.17.0.1")}}
	eth0 := Interface{Name: "eth0", Up: true, Addrs: []net.IP{ip("fe80::1"), ip("2001:db8::5"), ip("10.0.0.5")}}
	eth1v6 := Interface{Name: "eth1", Up: true, Addrs: []net.IP{ip("fe80::2"), ip("2001:db8::6")}}
	ib0 := Interface{Name: "ib0", Up: true, Addrs: []net.IP{ip("192.168.1.5")}}
	down := Interface{Name: "eth9", Addrs: []net.IP{ip("10.9.9.9")}}
	linkLocal := Interface{Name: "eth8", Up: true, Addrs: []net.IP{ip("fe80::8"), ip("169.254.1.1").To16()}}
	for _, tc := range []struct {
		spec string
		ifcs []Interface
		ifc  string
		ip   string
		err  bool
	}{
		{"", []Interface{lo, docker, eth0, ib0}, "eth0", "10.0.0.5", false}, // IPv4 first, not loopback or docker
		{"", []Interface{lo, down, docker}, "docker0", "172.17.0.1", false},
		{"", []Interface{lo, down}, "lo", "127.0.0.1", false},
		{"", []Interface{lo, eth1v6}, "eth1", "2001:db8::6", false}, // link-local skipped
		{"", []Interface{linkLocal, lo}, "lo", "127.0.0.1", false},
		{"", nil, "", "127.0.0.1", false},
		{"ib", []Interface{lo, eth0, ib0}, "ib0", "192.168.1.5", false},
		{"=lo", []Interface{eth0, lo}, "lo", "127.0.0.1", false}, // loopback when asked for
		{"^eth,docker", []Interface{eth0, docker, lo, ib0}, "lo", "127.0.0.1", false},
		{"eth9", []Interface{lo, down}, "", "", true}, // down
		{"=eth", []Interface{eth0}, "", "", true},
		{"eth8", []Interface{linkLocal}, "", "", true}, // nothing usable
	} {
		ch, err := Choose(ParseIfnames(tc.spec), tc.ifcs)
		if tc.err {
			if !errors.Is(err, ErrNoInterface) {
				t.Errorf("%q: chose %+v, %v; want ErrNoInterface", tc.spec, ch, err)
			}
			continue
		}
		if err != nil || ch.Interface != tc.ifc || ch.IP.String() != tc.ip || ch.Why == "" {
			t.Errorf("%q over %d interfaces: chose %+v, %v; want %s on %q", tc.spec, len(tc.ifcs), ch, err, tc.ip, tc.ifc)
		}
	}
}

// TestListenOnInterfaces binds loopback through a list, and fails a list
// that names nothing.
func TestListenOnInterfaces(t *testing.T) {
	ch, err := ChooseHost("=lo")
	if err != nil {
		t.Skipf("no interface called lo: %v", err)
	}
	l, err := New(WithInterfaces("=lo")).Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if host, _, _ := net.SplitHostPort(l.Addr()); host != ch.IP.String() {
		t.Errorf("Addr %q: want host %s", l.Addr(), ch.IP)
	}
	if _, err := New(WithInterfaces("=no-such-interface0")).Listen(""); !errors.Is(err, ErrNoInterface) {
		t.Errorf("Listen on a list naming nothing: %v, want ErrNoInterface", err)
	}
	if _, err := New(WithInterfaces("lo"), WithListenHost("127.0.0.1")).Listen(""); err == nil {
		t.Error("Listen with both a host and interfaces succeeded")
	}
}
