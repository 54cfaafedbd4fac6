package tcp

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

func TestParsePortRange(t *testing.T) {
	for _, tt := range []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"29500-29600", 29500, 29600, true},
		{" 29500 - 29600 ", 29500, 29600, true},
		{"8080", 8080, 8080, true},
		{"1-65535", 1, 65535, true},
		{"", 0, 0, false},
		{"0-10", 0, 0, false},
		{"10-5", 0, 0, false},
		{"1-65536", 0, 0, false},
		{"a-b", 0, 0, false},
		{"1-2-3", 0, 0, false},
		{"-5", 0, 0, false},
	} {
		lo, hi, err := ParsePortRange(tt.in)
		if (err == nil) != tt.ok || lo != tt.lo || hi != tt.hi {
			t.Errorf("ParsePortRange(%q) = %d, %d, %v; want %d, %d, ok=%v", tt.in, lo, hi, err, tt.lo, tt.hi, tt.ok)
		}
	}
}

// TestInvalidOptions: New accepts anything; Listen and Dial say what is
// wrong.
func TestInvalidOptions(t *testing.T) {
	for _, opt := range []Option{
		WithPortRange(9000, 8000),
		WithDialTimeout(0),
		WithHandshakeTimeout(-time.Second),
		WithCloseTimeout(0),
		WithSocketBuffers(-1, 0),
		WithMaxPayload(0),
		WithMaxPayload(-1),
	} {
		nw := New(opt)
		if l, err := nw.Listen(""); err == nil {
			l.Close()
			t.Errorf("Listen with %+v succeeded", nw.cfg)
		}
		if _, err := nw.Dial(t.Context(), "127.0.0.1:1", nil); err == nil || errors.Is(err, transport.ErrRefused) {
			t.Errorf("Dial with %+v: %v, want the invalid option", nw.cfg, err)
		}
	}
}

func TestPortRange(t *testing.T) {
	// A port that was free a moment ago; the range is that one port.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()

	nw := New(WithListenHost("127.0.0.1"), WithPortRange(port, port))
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if want := net.JoinHostPort("127.0.0.1", strconv.Itoa(port)); l.Addr() != want {
		t.Errorf("Listen with range %d-%d: Addr %q, want %q", port, port, l.Addr(), want)
	}
	// Port 0, however written, means a port from the range.
	for _, addr := range []string{"", "127.0.0.1:0", ":0"} {
		if l2, err := nw.Listen(addr); !errors.Is(err, transport.ErrAddrInUse) {
			if err == nil {
				l2.Close()
			}
			t.Errorf("Listen(%q) with the range exhausted: %v, want ErrAddrInUse", addr, err)
		}
	}
}

func TestAdvertise(t *testing.T) {
	l, err := New(WithAdvertiseHost("node7.example")).Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	host, _, err := net.SplitHostPort(l.Addr())
	if err != nil || host != "node7.example" {
		t.Errorf("Addr %q with an advertised host: want host node7.example", l.Addr())
	}

	// By default, an address of this host that peers can dial.
	l2, err := New().Listen("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	host, _, _ = net.SplitHostPort(l2.Addr())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.To4() == nil {
		t.Errorf("Addr %q of a listener on 0.0.0.0: want an IPv4 address of this host", l2.Addr())
	}

	// A listener bound to one address reports it.
	l3, err := New().Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	if host, _, _ := net.SplitHostPort(l3.Addr()); host != "127.0.0.1" {
		t.Errorf("Addr %q of a listener on 127.0.0.1", l3.Addr())
	}
}

func TestListenTakenExplicit(t *testing.T) {
	nw := New()
	l, err := nw.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l2, err := nw.Listen(l.Addr()); !errors.Is(err, transport.ErrAddrInUse) {
		if err == nil {
			l2.Close()
		}
		t.Errorf("Listen(%q) twice: %v, want ErrAddrInUse", l.Addr(), err)
	}
}

func TestListenInterface(t *testing.T) {
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	var lo string
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 && ifc.Flags&net.FlagUp != 0 {
			lo = ifc.Name
		}
	}
	if lo == "" {
		t.Skip("no loopback interface")
	}
	l, err := New(WithListenInterface(lo)).Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if host, _, _ := net.SplitHostPort(l.Addr()); host != "127.0.0.1" {
		t.Errorf("Addr %q of a listener on interface %s: want 127.0.0.1", l.Addr(), lo)
	}
	if _, err := New(WithListenInterface("no-such-interface0")).Listen(""); err == nil {
		t.Error("Listen on a missing interface succeeded")
	}
	if _, err := New(WithListenInterface(lo), WithListenHost("127.0.0.1")).Listen(""); err == nil {
		t.Error("Listen with both a host and an interface succeeded")
	}
}

// TestPayloadChecksums checks which connections checksum payloads: by
// default those between two hosts, and not those within one, over
// loopback or to the host's own address.
func TestPayloadChecksums(t *testing.T) {
	addr := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 29500} }
	for _, tc := range []struct {
		mode          Checksums
		local, remote string
		want          bool
	}{
		{ChecksumsBetweenHosts, "127.0.0.1", "127.0.0.1", false},
		{ChecksumsBetweenHosts, "10.0.0.5", "10.0.0.5", false},
		{ChecksumsBetweenHosts, "::1", "::1", false},
		{ChecksumsBetweenHosts, "10.0.0.5", "10.0.0.7", true},
		{ChecksumsAlways, "127.0.0.1", "127.0.0.1", true},
		{ChecksumsNever, "10.0.0.5", "10.0.0.7", false},
	} {
		cfg := defaultConfig()
		cfg.checksums = tc.mode
		if got := cfg.checkPayloads(addr(tc.local), addr(tc.remote)); got != tc.want {
			t.Errorf("mode %d, %s to %s: checksums %v, want %v", tc.mode, tc.local, tc.remote, got, tc.want)
		}
	}
	for s, want := range map[string]Checksums{"hosts": ChecksumsBetweenHosts, "always": ChecksumsAlways, "never": ChecksumsNever} {
		if got, err := ParseChecksums(s); err != nil || got != want {
			t.Errorf("ParseChecksums(%q) = %d, %v", s, got, err)
		}
	}
	if _, err := ParseChecksums("sometimes"); err == nil {
		t.Error("ParseChecksums accepted sometimes")
	}
}
