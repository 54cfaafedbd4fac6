//go:build linux

package nvl

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// TestByAddress checks that, where this process may read its own memory
// across processes (as a peer of the same user may), large payloads
// travel by address and come back to their lender once read.
func TestByAddress(t *testing.T) {
	if p := newProbe(); !readable(os.Getpid(), p.address(), p.bytes[:]) {
		t.Skip("process_vm_readv is not permitted here: payloads go through the ring")
	}
	d, a, _, ar := pair(t, New(WithByAddress(1024)))
	if !d.sendByAddress || !a.sendByAddress {
		t.Fatalf("sendByAddress %v and %v after the handshake, want both", d.sendByAddress, a.sendByAddress)
	}
	returned := make(chan int, 4)
	for i := range 4 {
		p := make([]byte, 1000+i*1000) // 1000 B inline, the rest by address
		for j := range p {
			p[j] = byte(i + j)
		}
		if err := d.Send(transport.Frame{Header: testHeader(i), Payload: p, Sent: func() { returned <- i }}); err != nil {
			t.Fatal(err)
		}
	}
	frames := ar.WaitFrames(t, 4)
	for i, f := range frames {
		if f.Header != testHeader(i) || len(f.Payload) != 1000+i*1000 {
			t.Fatalf("frame %d: %+v, %d bytes", i, f.Header, len(f.Payload))
		}
		for j, b := range f.Payload {
			if b != byte(i+j) {
				t.Fatalf("frame %d byte %d is %d, want %d", i, j, b, byte(i+j))
			}
		}
	}
	for range 4 {
		<-returned
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.lent) != 0 {
		t.Errorf("%d payloads still lent after every ack", len(d.lent))
	}
}

// TestGarbageFromPeer writes bytes that are no record into the ring: the
// receiver ends the connection with ErrProtocol and delivers nothing.
func TestGarbageFromPeer(t *testing.T) {
	var huge [recordLen]byte
	(&record{header: testHeader(1), what: inline}).encode(&huge)
	binary.LittleEndian.PutUint32(huge[32:], 1<<32-1)
	for _, junk := range [][]byte{
		make([]byte, recordLen),                            // kind 0, what 0
		append([]byte{1, 9}, make([]byte, recordLen-2)...), // a frame record of no known form
		huge[:], // a 4 GiB payload
	} {
		d, _, _, ar := pair(t, New())
		d.mu.Lock()
		d.tx.put(d.tail, junk)
		d.tail += uint64(len(junk))
		d.tx.ctl.tail.Store(d.tail)
		d.ring()
		d.mu.Unlock()
		frames, err := ar.WaitError(t)
		if len(frames) != 0 || !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrTooLarge) || !errors.Is(err, transport.ErrClosed) {
			t.Errorf("junk %x: %d frames, then %v; want none, then ErrProtocol or ErrTooLarge", junk, len(frames), err)
		}
	}
}
