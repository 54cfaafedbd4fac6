//go:build linux

package nvl

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// FuzzDecode feeds arbitrary bytes to the parsers of what a peer sends:
// the handshake's messages and record headers. They must never panic,
// and whatever they accept must be exactly what the encoders write for
// it, so that no two byte strings mean the same thing.
//
//	go test -run XXX -fuzz FuzzDecode ./nvl
func FuzzDecode(f *testing.F) {
	p := newProbe()
	f.Add(appendPreface(nil, p, []byte("rank 3")))
	f.Add(appendAnswer(nil, statusAccepted, true, p))
	f.Add(appendFinal(nil, true))
	for _, r := range []record{
		{header: testHeader(1), what: inline, n: 7},
		{header: testHeader(2), what: byAddress, n: 1 << 20, address: 0xc000100000},
		{what: ack, header: transport.Header{Tag: 3}},
		{what: bye},
	} {
		var b [recordLen]byte
		r.encode(&b)
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if pre, err := parsePreface(data); err == nil {
			back := appendPreface(nil, &probe{bytes: [16]byte(pre.probeBytes)}, pre.hello)
			if !bytes.Equal(back[:16], data[:16]) || !bytes.Equal(back[24:], data[24:]) {
				t.Fatalf("preface %x accepted, but it encodes as %x", data, back)
			}
		}
		if a, err := parseAnswer(data); err == nil && a.version == version {
			back := appendAnswer(nil, a.status, a.readsDialer, &probe{bytes: [16]byte(a.probeBytes)})
			if !bytes.Equal(back[:16], data[:16]) || !bytes.Equal(back[24:], data[24:]) {
				t.Fatalf("answer %x accepted, but it encodes as %x", data, back)
			}
		}
		if reads, err := parseFinal(data); err == nil && !bytes.Equal(appendFinal(nil, reads), data) {
			t.Fatalf("final message %x accepted, but it encodes otherwise", data)
		}
		if len(data) >= recordLen {
			h := (*[recordLen]byte)(data)
			if r, err := decodeRecord(h, 1<<20); err == nil {
				var back [recordLen]byte
				r.encode(&back)
				if back != *h {
					t.Fatalf("record %x accepted, but it encodes as %x", h[:], back[:])
				}
			}
		}
	})
}

// FuzzReceive writes arbitrary bytes into a connection's ring as a peer
// would, and dies: the receiver delivers whole frames, then ends the
// connection with an error that says why, and never panics or hangs.
func FuzzReceive(f *testing.F) {
	var b [recordLen]byte
	(&record{header: testHeader(1), what: inline, n: 3}).encode(&b)
	f.Add(append(b[:], "abc"...))
	(&record{what: bye}).encode(&b)
	f.Add(b[:])
	(&record{what: ack, header: transport.Header{Tag: 1}}).encode(&b)
	f.Add(b[:])
	f.Add(bytes.Repeat([]byte{1}, 100))
	nw := New(WithByAddress(0), WithRingSize(MinRing))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MinRing {
			return
		}
		d, _, _, ar := pair(t, nw)
		d.mu.Lock()
		d.tx.put(d.tail, data)
		d.tail += uint64(len(data))
		d.tx.ctl.tail.Store(d.tail)
		d.mu.Unlock()
		d.sock.Close() // as a peer's death would: the receiver takes in what is there, then ends
		frames, err := ar.WaitError(t)
		if !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("after %d frames: %v, want an error wrapping ErrClosed", len(frames), err)
		}
	})
}
