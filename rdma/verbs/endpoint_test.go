package verbs

import (
	"bytes"
	"errors"
	"testing"
)

var roce = Endpoint{
	QPN: 0x00abcd, PSN: 0x123456, GID: GID{10: 0xff, 11: 0xff, 12: 10, 15: 7},
	Port: 1, GIDIndex: 3, MTU: MTU1024, RdAtomic: 16,
}

var infiniband = Endpoint{QPN: 0xffffff, PSN: 0, LID: 0x1b, Port: 2, MTU: MTU4096, RdAtomic: 1}

func TestEndpointRoundTrip(t *testing.T) {
	for _, e := range []Endpoint{roce, infiniband} {
		b, err := e.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary(%v): %v", e, err)
		}
		if len(b) != EndpointSize {
			t.Fatalf("MarshalBinary(%v) is %d bytes, want %d", e, len(b), EndpointSize)
		}
		var d Endpoint
		if err := d.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary(%x): %v", b, err)
		}
		if d != e {
			t.Fatalf("round trip: %v became %v", e, d)
		}
		prefixed, err := e.AppendBinary([]byte("head"))
		if err != nil || !bytes.Equal(prefixed, append([]byte("head"), b...)) {
			t.Fatalf("AppendBinary = %x, %v", prefixed, err)
		}
	}
}

// The encoding is a wire format: this is what version 1 looks like.
func TestEndpointEncoding(t *testing.T) {
	b, err := roce.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		'V', 1,
		0x00, 0x00, 0xab, 0xcd, // QPN
		0x00, 0x12, 0x34, 0x56, // PSN
		0x00, 0x00, // LID
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7, // GID
		1, 3, 3, 16, // port, GID index, MTU, RdAtomic
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("MarshalBinary = %x\nwant            %x", b, want)
	}
}

func TestEndpointRejects(t *testing.T) {
	good, _ := roce.MarshalBinary()
	edit := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(good))
	}
	for name, b := range map[string][]byte{
		"empty":         nil,
		"short":         good[:EndpointSize-1],
		"long":          append(bytes.Clone(good), 0),
		"magic":         edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":       edit(func(b []byte) []byte { b[1] = 2; return b }),
		"QPN over 24":   edit(func(b []byte) []byte { b[2] = 1; return b }),
		"PSN over 24":   edit(func(b []byte) []byte { b[6] = 1; return b }),
		"port 0":        edit(func(b []byte) []byte { b[28] = 0; return b }),
		"MTU 0":         edit(func(b []byte) []byte { b[30] = 0; return b }),
		"MTU 6":         edit(func(b []byte) []byte { b[30] = 6; return b }),
		"RdAtomic 0":    edit(func(b []byte) []byte { b[31] = 0; return b }),
		"no LID or GID": edit(func(b []byte) []byte { clear(b[10:28]); return b }),
	} {
		d := roce
		d.QPN = 1
		err := d.UnmarshalBinary(b)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: UnmarshalBinary(%x) = %v, want ErrInvalid", name, b, err)
		}
		if d.QPN != 1 {
			t.Errorf("%s: a rejected UnmarshalBinary changed the endpoint", name)
		}
	}
	bad := roce
	bad.PSN = 1 << 24
	if _, err := bad.MarshalBinary(); !errors.Is(err, ErrInvalid) {
		t.Errorf("MarshalBinary of a 25-bit PSN: %v, want ErrInvalid", err)
	}
}

// FuzzEndpoint: bytes from a peer never panic the decoder, and whatever it
// accepts encodes back to the same bytes.
func FuzzEndpoint(f *testing.F) {
	for _, e := range []Endpoint{roce, infiniband} {
		b, _ := e.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("V\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Endpoint
		if err := e.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("UnmarshalBinary(%x) = %v, not ErrInvalid", b, err)
			}
			return
		}
		again, err := e.MarshalBinary()
		if err != nil {
			t.Fatalf("accepted %x as %v but cannot encode it: %v", b, e, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decode-encode changed %x to %x", b, again)
		}
	})
}
