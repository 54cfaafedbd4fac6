package resume

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gocomms/gocomms/transport"
)

// When a receiver acknowledges: at once for a frame whose sender asks
// (askAck), else every ackFrames frames or ackBytes bytes.
const (
	ackFrames = 64
	ackBytes  = 1 << 20
)

// Window bounds the bytes a Conn has sent and the peer not yet
// acknowledged: later frames wait in the Conn until acknowledgements make
// room, so that a peer that stops reading stops the sender's connection
// from growing too.
const Window = 64 << 20

// record is a numbered frame kept until the peer acknowledges it, so that
// it can be sent again on a new connection.
type record struct {
	f    transport.Frame // as its sender gave it: Sent set if lent
	refs atomic.Int32    // the Conn's hold, plus one per connection still reading the payload
	sent func()          // release, made once per record: the Sent of every copy lent to a connection
	pool *records
}

// lent reports whether the frame's sender waits for its payload back.
func (r *record) lent() bool { return r.f.Sent != nil }

// release drops one hold; the last gives the payload back to its sender
// (lent) or to the pool (owned), and the record to its pool.
func (r *record) release() {
	if r.refs.Add(-1) == 0 {
		transport.Release(r.f)
		r.f = transport.Frame{}
		r.pool.put(r)
	}
}

// records keeps a Conn's records for reuse, so that a frame sent
// allocates nothing; connections give them back from any goroutine.
type records struct {
	mu   sync.Mutex
	free []*record
}

// recordsKept bounds the records a Conn keeps for reuse.
const recordsKept = 1024

func (p *records) get(f transport.Frame) *record {
	p.mu.Lock()
	var r *record
	if n := len(p.free); n > 0 {
		r = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	}
	p.mu.Unlock()
	if r == nil {
		r = &record{pool: p}
		r.sent = r.release
	}
	r.f = f
	r.refs.Store(1)
	return r
}

func (p *records) put(r *record) {
	p.mu.Lock()
	if len(p.free) < recordsKept {
		p.free = append(p.free, r)
	}
	p.mu.Unlock()
}

// outbound is what a Conn has sent: numbered frames count from 1, and
// those the peer has not acknowledged stay in unacked, oldest first.
type outbound struct {
	next    uint64 // numbered frames sent so far
	acked   uint64 // of them, those the peer acknowledged
	unacked []*record
	// transmitted counts the frames of unacked given to the current
	// connection, and wire their payload bytes; the rest wait for the
	// peer's resume or for room in the Window.
	transmitted int
	wire        int
	lent        int // frames of unacked whose sender waits for them back
}

// add numbers r and keeps it.
func (o *outbound) add(r *record) {
	o.next++
	o.unacked = append(o.unacked, r)
	if r.lent() {
		o.lent++
	}
}

// ack forgets the frames up to n, which the peer confirmed, appending
// them to acked for the caller to release once it holds no lock: a lent
// payload's Sent is its sender's code.
func (o *outbound) ack(n uint64, acked []*record) ([]*record, error) {
	if n < o.acked || n > o.next {
		return acked, fmt.Errorf("%w: the peer acknowledged %d frames; %d were sent and %d acknowledged before", errProtocol, n, o.next, o.acked)
	}
	drop := int(n - o.acked)
	from := len(acked)
	// Shifted rather than resliced, so that appending reuses the array.
	acked = append(acked, o.unacked[:drop]...)
	o.unacked = o.unacked[:copy(o.unacked, o.unacked[drop:])]
	clear(o.unacked[len(o.unacked) : len(o.unacked)+drop])
	for i, r := range acked[from:] {
		if i < o.transmitted {
			o.wire -= len(r.f.Payload)
		}
		if r.lent() {
			o.lent--
		}
	}
	o.transmitted = max(o.transmitted-drop, 0)
	o.acked = n
	return acked, nil
}

// reconnected starts a new connection, on which nothing is transmitted
// yet, and returns how many frames the last one carried unacknowledged.
func (o *outbound) reconnected() int {
	n := o.transmitted
	o.transmitted, o.wire = 0, 0
	return n
}

// pending is the next frame to transmit, if the Window has room for it.
func (o *outbound) pending() (*record, bool) {
	if !o.stalled() {
		return nil, false
	}
	r := o.unacked[o.transmitted]
	if o.wire > 0 && o.wire+len(r.f.Payload) > Window {
		return nil, false
	}
	return r, true
}

// stalled reports whether a frame waits to be transmitted.
func (o *outbound) stalled() bool { return o.transmitted < len(o.unacked) }

// transmitting records that pending's frame goes to the connection, which
// holds it until it lets go of the payload.
func (o *outbound) transmitting(r *record) {
	o.transmitted++
	o.wire += len(r.f.Payload)
	r.refs.Add(1)
}

// takeAll forgets every frame kept, when the Conn ends, and returns them
// for the caller to release.
func (o *outbound) takeAll() []*record {
	kept := o.unacked
	o.unacked, o.transmitted, o.wire, o.lent = nil, 0, 0, 0
	return kept
}

// release releases records, and clears them.
func release(records []*record) {
	for _, r := range records {
		r.release()
	}
	clear(records)
}

// inbound is what a Conn has received.
type inbound struct {
	received uint64 // numbered frames delivered so far
	ackedAt  uint64 // received when this end last acknowledged
	bytes    int    // payload bytes since then
}

// arrived counts a numbered frame of size bytes and reports whether to
// acknowledge now.
func (in *inbound) arrived(size int) bool {
	in.received++
	in.bytes += size
	return in.received-in.ackedAt >= ackFrames || in.bytes >= ackBytes
}

// acknowledged records that a frame acknowledging received went out.
func (in *inbound) acknowledged() {
	in.ackedAt, in.bytes = in.received, 0
}
