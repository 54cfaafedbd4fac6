package rdma

import (
	"errors"
	"strings"
	"testing"
)

func TestViewBounds(t *testing.T) {
	m := register(t, make([]byte, 10))
	for _, c := range []struct {
		off, n int
		ok     bool
	}{
		{0, 10, true}, {0, 0, true}, {10, 0, true}, {3, 7, true}, {9, 1, true},
		{0, 11, false}, {10, 1, false}, {11, 0, false}, {-1, 1, false}, {1, -1, false}, {5, 1 << 62, false},
	} {
		v, err := m.View(c.off, c.n)
		mv, merr := m.MutableView(c.off, c.n)
		if c.ok != (err == nil) || c.ok != (merr == nil) {
			t.Errorf("View(%d, %d): %v; MutableView: %v; want ok=%v", c.off, c.n, err, merr, c.ok)
			continue
		}
		if !c.ok {
			if !errors.Is(err, ErrBounds) || !errors.Is(merr, ErrBounds) {
				t.Errorf("View(%d, %d): %v, %v; want ErrBounds", c.off, c.n, err, merr)
			}
			continue
		}
		if v.Len() != c.n || mv.Len() != c.n || mv.View() != v {
			t.Errorf("View(%d, %d) has length %d, MutableView %d", c.off, c.n, v.Len(), mv.Len())
		}
		if b, _ := v.bytes(); len(b) != c.n || c.n > 0 && &b[0] != &m.buf[c.off] {
			t.Errorf("View(%d, %d) is not the registered bytes there", c.off, c.n)
		}
	}
}

func TestRegistrationKeys(t *testing.T) {
	buf := make([]byte, 16)
	a, b := register(t, buf), register(t, buf)
	if a.Remote().Key == b.Remote().Key || a.Remote().Key == 0 {
		t.Fatalf("two registrations of one buffer have keys %#x and %#x", a.Remote().Key, b.Remote().Key)
	}
	if a.Remote().Addr != b.Remote().Addr || a.Remote().Len != 16 {
		t.Fatalf("registrations of one buffer: %v and %v", a.Remote(), b.Remote())
	}
	if lookup(a.Remote().Key) != a {
		t.Fatal("lookup does not find a registration by its key")
	}
	a.Deregister()
	if lookup(a.Remote().Key) != nil || lookup(b.Remote().Key) != b {
		t.Fatal("deregistering one registration changed the registry wrongly")
	}
}

func TestRemoteBufferSlice(t *testing.T) {
	r := RemoteBuffer{Addr: 1000, Len: 100, Key: 7}
	for _, c := range []struct {
		off, n uint64
		want   RemoteBuffer
		ok     bool
	}{
		{0, 100, r, true},
		{10, 20, RemoteBuffer{Addr: 1010, Len: 20, Key: 7}, true},
		{100, 0, RemoteBuffer{Addr: 1100, Len: 0, Key: 7}, true},
		{101, 0, RemoteBuffer{}, false},
		{50, 51, RemoteBuffer{}, false},
		{1, 1<<64 - 1, RemoteBuffer{}, false},
	} {
		got, err := r.Slice(c.off, c.n)
		if c.ok != (err == nil) || c.ok && got != c.want || !c.ok && !errors.Is(err, ErrBounds) {
			t.Errorf("Slice(%d, %d) = %v, %v; want %v, ok=%v", c.off, c.n, got, err, c.want, c.ok)
		}
	}
}

func TestRemoteBufferBinary(t *testing.T) {
	r := RemoteBuffer{Addr: 0x0102030405060708, Len: 0x1112, Key: 0xa1a2a3a4a5a6a7a8}
	b, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 8, 7, 6, 5, 4, 3, 2, 1, 0x12, 0x11, 0, 0, 0, 0, 0, 0, 0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1}
	if string(b) != string(want) {
		t.Fatalf("MarshalBinary = %x, want %x", b, want)
	}
	var back RemoteBuffer
	if err := back.UnmarshalBinary(b); err != nil || back != r {
		t.Fatalf("UnmarshalBinary = %v, %v", back, err)
	}
	bad := func(mutate func([]byte) []byte) []byte { return mutate(append([]byte(nil), want...)) }
	for name, in := range map[string][]byte{
		"empty":    nil,
		"short":    want[:24],
		"long":     append(append([]byte(nil), want...), 0),
		"version":  bad(func(b []byte) []byte { b[0] = 2; return b }),
		"key 0":    bad(func(b []byte) []byte { clear(b[17:]); return b }),
		"wrapping": bad(func(b []byte) []byte { b[8], b[16] = 0xff, 0xff; return b }),
	} {
		back := RemoteBuffer{Key: 1}
		if err := back.UnmarshalBinary(in); !errors.Is(err, ErrInvalid) || back != (RemoteBuffer{Key: 1}) {
			t.Errorf("%s: UnmarshalBinary(%x) = %v, left %v; want ErrInvalid and no change", name, in, err, back)
		}
	}
}

func TestAddress(t *testing.T) {
	good := makeAddress("tcp", tcpPart{nonce: 42, hostport: "10.0.0.7:41234"}.encode())
	if got := good.String(); got != "tcp 10.0.0.7:41234" {
		t.Errorf("String() = %q", got)
	}
	name, part, err := good.parse()
	if err != nil || name != "tcp" {
		t.Fatalf("parse: %q, %v", name, err)
	}
	if p, err := parseTCPPart(part); err != nil || p.nonce != 42 || p.hostport != "10.0.0.7:41234" {
		t.Fatalf("tcp part: %+v, %v", p, err)
	}
	for name, a := range map[string]Address{
		"empty":         {},
		"version":       append(Address{2}, good[1:]...),
		"no name":       {1, 0, 0, 0},
		"name case":     makeAddress("TCP", part),
		"trailing byte": append(append(Address{}, good...), 0),
		"cut":           good[:len(good)-1],
	} {
		if _, _, err := a.parse(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: parse(%x) = %v, want ErrInvalid", name, []byte(a), err)
		}
		if !strings.HasPrefix(a.String(), "invalid") {
			t.Errorf("%s: String() = %q", name, a.String())
		}
	}
	for name, p := range map[string][]byte{
		"no nonce":  tcpPart{hostport: "h:1"}.encode(),
		"no port":   tcpPart{nonce: 1, hostport: "host"}.encode(),
		"port 0":    tcpPart{nonce: 1, hostport: "host:0"}.encode(),
		"big port":  tcpPart{nonce: 1, hostport: "host:65536"}.encode(),
		"no host":   tcpPart{nonce: 1, hostport: ":80"}.encode(),
		"bad count": append(tcpPart{nonce: 1, hostport: "h:1"}.encode(), 'x'),
	} {
		if _, err := parseTCPPart(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: parseTCPPart(%x) = %v, want ErrInvalid", name, p, err)
		}
	}
}

func TestProviders(t *testing.T) {
	if got := Providers(); len(got) != 2 || got[0] != "tcp" || got[1] != "verbs" {
		t.Fatalf("Providers() = %v", got)
	}
	if err := Supported("tcp"); err != nil {
		t.Fatal(err)
	}
	if err := Supported("nosuch"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Supported(nosuch) = %v, want ErrUnsupported", err)
	}
	// verbs works only with libibverbs and a device: verbs_test.go.
	if err := Supported("verbs"); err != nil && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Supported(verbs) = %v, want nil or ErrUnsupported", err)
	}
	for _, o := range []Option{WithListenHost("no such host!"), WithAdvertiseHost("a b")} {
		if _, err := New(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("New with a bad host: %v, want ErrInvalid", err)
		}
	}
}

// TestAdvertise binds every interface and connects through the address
// Bind advertises.
func TestAdvertise(t *testing.T) {
	ctx := testContext(t)
	for _, opts := range [][]Option{nil, {WithAdvertiseHost("127.0.0.1")}} {
		b, err := New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		addr, err := b.Bind()
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := b.Bind(); string(again) != string(addr) {
			t.Fatalf("a second Bind returned %v, the first %v", again, addr)
		}
		a := newBound(t)
		if err := a.Connect(ctx, addr); err != nil {
			t.Fatalf("Connect to %v: %v", addr, err)
		}
	}
}
