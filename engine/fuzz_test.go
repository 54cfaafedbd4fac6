package engine

import (
	"bytes"
	"testing"
)

// FuzzDecodePlacement feeds arbitrary bytes to the decoder of the window
// placement each peer sends. It must never panic, and whatever it accepts
// must encode back to the same bytes, so that no two byte strings name the
// same memory.
//
//	go test -run XXX -fuzz FuzzDecodePlacement ./engine
func FuzzDecodePlacement(f *testing.F) {
	valid := placement{host: 1 << 40, pid: 4242, fd: 7}.encode()
	f.Add(valid)
	f.Add(placementOf(nil).encode())
	f.Add(valid[:placementSize-1])
	f.Add(append(valid, 0))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodePlacement(data)
		if err != nil {
			if len(data) == placementSize {
				t.Fatalf("placement %x refused: %v", data, err)
			}
			return
		}
		if again := p.encode(); !bytes.Equal(again, data) {
			t.Fatalf("placement %x accepted as %+v, which encodes as %x", data, p, again)
		}
	})
}
