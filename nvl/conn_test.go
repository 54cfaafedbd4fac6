//go:build linux

package nvl

import (
	"bytes"
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

// TestSlots checks that payloads of slot size arrive lent from the
// peer's slots, read in place, and that the slots come back when given
// back; that a receiver keeping every slot only sends the rest through
// the ring; and that a slot lent when the connection ends keeps the
// segment mapped until it comes back.
func TestSlots(t *testing.T) {
	const slots, size = 4, 64 << 10
	nw := New(WithSlots(slots, size))
	d, a := connectPair(t, nw)
	got := make(chan transport.Frame, 2*slots)
	a.Start(handlerFunc(func(f transport.Frame) { got <- f }))
	p := make([]byte, size)
	for i := range p {
		p[i] = byte(i)
	}
	for i := range 2 * slots {
		if err := d.Send(transport.Frame{Header: testHeader(i), Payload: bytes.Clone(p)}); err != nil {
			t.Fatal(err)
		}
	}
	var kept []transport.Frame
	for i := range 2 * slots {
		f := <-got
		if f.Header != testHeader(i) || !bytes.Equal(f.Payload, p) {
			t.Fatalf("frame %d: %+v with %d bytes, not what was sent", i, f.Header, len(f.Payload))
		}
		if lent := f.Sent != nil; lent != (i < slots) {
			t.Fatalf("frame %d lent %v: want the first %d lent from slots, the rest through the ring", i, lent, slots)
		}
		kept = append(kept, f)
	}
	for _, f := range kept {
		transport.Release(f)
	}
	for i := range slots {
		if s := a.rxSlab.states[i].Load(); s != 0 {
			t.Errorf("slot %d is %d after its payload came back", i, s)
		}
	}
	if err := d.Send(transport.Frame{Header: testHeader(9), Payload: bytes.Clone(p)}); err != nil {
		t.Fatal(err)
	}
	f := <-got
	if f.Sent == nil {
		t.Fatal("a freed slot was not used again")
	}
	d.Close()
	<-a.Drained()
	if !bytes.Equal(f.Payload, p) {
		t.Fatal("the lent payload changed after the connection ended")
	}
	transport.Release(f) // unmaps the segment
}

type handlerFunc func(transport.Frame)

func (h handlerFunc) HandleFrame(f transport.Frame) { h(f) }
func (h handlerFunc) HandleError(error)             {}
