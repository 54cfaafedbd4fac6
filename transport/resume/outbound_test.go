package resume

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
)

// TestOutboundKeepsAndReleases drives a Conn's send bookkeeping through
// drawn sends, transmissions, transports finishing, acknowledgements and
// reconnections: a frame is given back exactly once, only after the peer
// acknowledged it and every transport that read it let go; the window
// holds; the counts stay true; acknowledgements that contradict them are
// refused.
func TestOutboundKeepsAndReleases(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var o outbound
		released := map[int]int{} // frame index -> times given back
		var pool records
		var reading []*record // lent to a transport, not yet let go
		var ofs []*record     // by frame index; a record given back is reused
		frames, lent := 0, 0
		for range rapid.IntRange(0, 200).Draw(t, "steps") {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0: // the operation sends
				i := frames
				frames++
				f := transport.Frame{Payload: transport.Phantom(rapid.IntRange(0, Window/2).Draw(t, "size"))}
				if rapid.Bool().Draw(t, "lent") {
					lent++
					f.Sent = func() {
						released[i]++
						if slices.Contains(o.unacked, ofs[i]) || slices.Contains(reading, ofs[i]) {
							t.Fatalf("frame %d given back while still kept or read", i)
						}
					}
				}
				o.add(pool.get(f))
				ofs = append(ofs, o.unacked[len(o.unacked)-1])
			case 1: // the Conn transmits what the window allows
				for {
					of, ok := o.pending()
					if !ok {
						break
					}
					o.transmitting(of)
					reading = append(reading, of)
				}
			case 2: // a transport lets a payload go
				if len(reading) > 0 {
					k := rapid.IntRange(0, len(reading)-1).Draw(t, "done")
					of := reading[k]
					reading = slices.Delete(reading, k, k+1)
					of.sent()
				}
			case 3: // the peer acknowledges
				n := o.acked + uint64(rapid.IntRange(0, int(o.next-o.acked)).Draw(t, "acked"))
				acked, err := o.ack(n, nil)
				release(acked)
				if err != nil {
					t.Fatalf("ack(%d) with %d acked of %d: %v", n, o.acked, o.next, err)
				}
			case 4: // a bad acknowledgement
				if _, err := o.ack(o.next+1, nil); err == nil {
					t.Fatal("an acknowledgement beyond what was sent was taken")
				}
				if o.acked > 0 {
					if _, err := o.ack(o.acked-1, nil); err == nil {
						t.Fatal("an acknowledgement going backwards was taken")
					}
				}
			case 5: // a new connection
				o.reconnected()
			}
			lent, wire := 0, 0
			for k, of := range o.unacked {
				if of.lent() {
					lent++
				}
				if k < o.transmitted {
					wire += len(of.f.Payload)
				}
			}
			if lent != o.lent || wire != o.wire || len(o.unacked) != int(o.next-o.acked) {
				t.Fatalf("counts: lent %d (kept %d), wire %d (kept %d), %d unacked of %d-%d", lent, o.lent, wire, o.wire, len(o.unacked), o.next, o.acked)
			}
			if o.transmitted > 1 && o.wire > Window {
				t.Fatalf("%d bytes on the wire, over the window", o.wire)
			}
		}
		for i, n := range released {
			if n != 1 {
				t.Fatalf("frame %d given back %d times", i, n)
			}
		}
		release(o.takeAll())
		for len(reading) > 0 {
			of := reading[0]
			reading = reading[1:]
			of.sent()
		}
		if len(released) != lent {
			t.Fatalf("%d of %d lent frames given back after the end", len(released), lent)
		}
		for i, n := range released {
			if n != 1 {
				t.Fatalf("after the end, frame %d given back %d times", i, n)
			}
		}
	})
}

// TestInboundAcknowledges: a receiver acknowledges every ackFrames frames
// or ackBytes bytes, whichever comes first, and not before.
func TestInboundAcknowledges(t *testing.T) {
	var in inbound
	for i := 1; i < ackFrames; i++ {
		if in.arrived(10) {
			t.Fatalf("acknowledged after %d small frames", i)
		}
	}
	if !in.arrived(10) {
		t.Fatalf("no acknowledgement after %d frames", ackFrames)
	}
	in.acknowledged()
	if in.arrived(ackBytes-1) || !in.arrived(1) {
		t.Fatal("the byte bound is not where it should be")
	}
}
