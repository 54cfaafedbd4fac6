package link

import (
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/gocomms/gocomms/transport"
)

// A large message goes by rendezvous: its sender offers it to the plane
// of the link to its receiver (Offer) and sends a frame that announces
// it; the receiver's operation, once it is posted, answers with a frame
// that clears it; the sender's plane, which takes that frame itself,
// then sends the data, lent from the sender's memory. A receiver thus
// holds no large message it has not posted a buffer for, only its
// announcement.
//
// The marks sit in the high bits of the frame's tag, above the largest
// tag a message may carry; a collective's frames use the same bits for
// their own marks (package collective).
const (
	// TagAnnounce marks a message's announcement, whose payload is its
	// length, a little-endian uint64.
	TagAnnounce uint32 = 1 << 31
	// TagClear marks the receiver's word to send the message. It has no
	// payload.
	TagClear uint32 = 1 << 30
	// TagMarks are the bits marks take.
	TagMarks = TagAnnounce | TagClear
)

// offer is a large message waiting at its sender for its receiver.
type offer struct {
	key    Key
	header transport.Header
	data   []byte
	done   func(error)
}

// Offer keeps data, the payload of the message h heads, until the
// receiver clears it: the plane then sends it, lent, and calls done
// once the connection gives the memory back, or with the error that
// kept it from going: the link failed, or Withdraw. The caller sends
// the announcement (Announcement) after the offer.
func (p *Plane) Offer(h transport.Header, data []byte, done func(error)) {
	p.mu.Lock()
	if err := p.err; err != nil {
		p.mu.Unlock()
		done(err)
		return
	}
	p.offers = append(p.offers, offer{key: KeyOf(h), header: h, data: data, done: done})
	p.mu.Unlock()
}

// Announcement returns the frame that announces the message h heads, of
// n bytes.
func Announcement(h transport.Header, n int) transport.Frame {
	h.Tag |= TagAnnounce
	p := transport.GetBuffer(8)
	binary.LittleEndian.PutUint64(p, uint64(n))
	return transport.Frame{Header: h, Payload: p}
}

// Clearance returns the frame that clears the message h, an
// announcement, heads.
func Clearance(h transport.Header) transport.Frame {
	h.Tag = h.Tag&^TagMarks | TagClear
	return transport.Frame{Header: h}
}

// AnnouncedLength returns the length an announcement's payload gives,
// and whether it is one.
func AnnouncedLength(payload []byte) (int, bool) {
	if len(payload) != 8 {
		return 0, false
	}
	return int(min(binary.LittleEndian.Uint64(payload), 1<<62)), true
}

// Withdraw takes back the offer of the message h heads, if the receiver
// has not cleared it yet, and calls its done with err.
func (p *Plane) Withdraw(h transport.Header, err error) {
	if o, ok := p.takeOffer(h); ok {
		o.done(err)
	}
}

// takeOffer removes the offer of the message h heads, if the plane
// holds it, and returns it.
func (p *Plane) takeOffer(h transport.Header) (offer, bool) {
	key := KeyOf(h)
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.offers, func(o offer) bool { return o.key == key })
	if i < 0 {
		return offer{}, false
	}
	o := p.offers[i]
	p.offers = slices.Delete(p.offers, i, i+1)
	return o, true
}

// cleared sends the message the receiver cleared (h). A clearance for
// no offer, one withdrawn, is dropped.
func (p *Plane) cleared(h transport.Header) {
	o, ok := p.takeOffer(h)
	if !ok {
		return
	}
	s := &sending{done: o.done}
	s.err = p.Send(transport.Frame{Header: o.header, Payload: o.data, Sent: s.half})
	s.half()
}

// sending is an offer's data on its way. Its two halves end in either
// order: Send returns, with its error, and the connection gives the data
// back (Sent), within Send if it failed, or once the peer has it. done
// is told after both.
type sending struct {
	halves atomic.Int32
	err    error // Send's, written before its half counts
	done   func(error)
}

func (s *sending) half() {
	if s.halves.Add(1) == 2 {
		s.done(s.err)
	}
}
