package collective

import (
	"fmt"
	"slices"

	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// Frames of registered memory carry marks in the high bits of their tag:
// a descriptor the receiver maps instead of a payload, and the receiver's
// word that it has read what the descriptor named, which completes the
// sending step.
// They share the bits of a message's rendezvous marks (link.TagMarks).
const (
	tagRegistered uint32 = 1 << 31
	tagRead       uint32 = 1 << 30
	tagMarks             = link.TagMarks
)

// MaxTag is the largest tag a point-to-point message may carry: the marks
// take the bits above it.
const MaxTag = 1<<30 - 1

// accept checks a frame of the collective from peer and holds it for its
// step, which may become ready. A frame that does not fit the operation
// is released, and the failure returned names the peer and tells the
// operation's peers.
//
// A descriptor of the peer's registered memory is held as the memory it
// names, mapped; the peer hears it was read once the step ran
// (readFrame). The word that the peer read a registered send is not for
// accept: read says which step it completes, -1 for any other frame.
func (e *executor) accept(peer int, f transport.Frame) (read int, fail *Fail) {
	req := e.req
	h := f.Header
	if h.Tag&tagRead != 0 {
		transport.Release(f)
		return e.readStep(peer, h.Tag&^tagMarks), nil
	}
	registered := h.Tag&tagRegistered != 0
	h.Tag &^= tagMarks
	f.Header = h
	if h.Sig != req.Sig {
		transport.Release(f)
		return -1, &Fail{Err: commerr.Invalid("arguments differ across ranks: %s", Mismatch(h.Sig, req.Sig, peer, req.Rank)), Ranks: []int{peer}, Tell: true}
	}
	tag := int(h.Tag)
	if req.P2P != nil {
		tag = e.p2pTag(peer, h)
	}
	var step int
	var err error
	before := len(e.ready)
	e.ready, step, err = e.prog.Arrive(peer, tag, e.ready)
	readyNow := len(e.ready) > before
	if err != nil {
		transport.Release(f)
		return -1, &Fail{Err: commerr.Invalid("unexpected message %d from rank %d: %v", h.Tag, peer, err), Ranks: []int{peer}, Tell: true}
	}
	want := req.Schedule.Steps[step].Dst.Len * e.elemSize
	if registered {
		mem, err := e.resolve(f.Payload, want)
		transport.Release(f)
		if err != nil {
			return -1, &Fail{Err: fmt.Errorf("%w: rank %d's registered memory: %v", commerr.ErrPeerFailed, peer, err), Ranks: []int{peer}, Tell: true}
		}
		f = transport.Frame{Header: h, Payload: mem}
		e.mapped[step] = true
		if !readyNow {
			e.unready = append(e.unready, step)
		}
	} else if len(f.Payload) != want {
		transport.Release(f)
		return -1, &Fail{Err: commerr.Invalid("rank %d sent %d bytes where this rank expects %d: sizes differ across ranks", peer, len(f.Payload), want), Ranks: []int{peer}, Tell: true}
	}
	// A payload lent by the transport is read in place: the step runs
	// from it and gives it back.
	e.held.put(step, f)
	return -1, nil
}

// letGo copies out the peer's memory that steps which could not run yet
// hold, and appends those steps to acks, for the driver to tell each
// peer its memory was read. A driver calls it whenever it runs out of
// steps to run: a rank that waits then holds nothing a peer waits for, so
// that no two ranks can wait on each other through registered memory (as
// an exchange in place would, each rank reducing into the buffer it sent).
func (e *executor) letGo(acks []int) []int {
	for _, i := range e.unready {
		f := e.held.of(i)
		if !e.mapped[i] || f == nil {
			continue // it ran in place
		}
		p := transport.GetBuffer(len(f.Payload))
		copy(p, f.Payload)
		f.Payload = p
		e.mapped[i] = false
		acks = append(acks, i)
	}
	e.unready = e.unready[:0]
	return acks
}

// resolve maps the n bytes a peer's descriptor names.
func (e *executor) resolve(desc []byte, n int) ([]byte, error) {
	if e.req.Memory == nil {
		return nil, fmt.Errorf("a descriptor where this rank has no registered memory")
	}
	return e.req.Memory.Resolve(desc, n)
}

// readStep returns the sending step to peer with tag whose memory the
// peer was reading, and is no longer: -1 if there is none.
func (e *executor) readStep(peer int, tag uint32) int {
	for i, s := range e.req.Schedule.Steps {
		if s.Prim == algorithms.Send && s.Peer == peer && uint32(s.Tag) == tag && e.reading[i] {
			e.reading[i] = false
			return i
		}
	}
	return -1
}

// readFrame returns the frame that tells the peer of receiving step i
// that this rank has read the memory it mapped, if it was mapped.
func (e *executor) readFrame(i int) (transport.Frame, bool) {
	if !e.mapped[i] {
		return transport.Frame{}, false
	}
	e.mapped[i] = false
	return e.readDone(i), true
}

// readDone is the frame that tells the peer of receiving step i that this
// rank has read the memory its descriptor named.
func (e *executor) readDone(i int) transport.Frame {
	h := e.req.header(i)
	h.Tag = uint32(e.req.Schedule.Steps[i].Tag) | tagRead
	return transport.Frame{Header: h}
}

// registeredFrame returns the frame that sends src, step i's region, as
// a descriptor of registered memory, if it lies in some and is large
// enough that the peer's read saves more than the word back costs: the
// step then completes once the peer says it has read it.
func (e *executor) registeredFrame(i int, src []byte) (transport.Frame, bool) {
	m := e.req.Memory
	if m == nil || e.req.Phantom {
		return transport.Frame{}, false
	}
	if len(src) < lendMin {
		return transport.Frame{}, false
	}
	buf := transport.GetBuffer(descriptorMax)
	desc, ok := m.Describe(src, buf[:0])
	if !ok {
		transport.PutBuffer(buf)
		return transport.Frame{}, false
	}
	h := e.req.header(i)
	h.Tag |= tagRegistered
	e.reading[i] = true
	return transport.Frame{Header: h, Payload: desc}, true
}

// descriptorMax bounds a registered memory's descriptor.
const descriptorMax = 64

// inbound returns, by peer in Request.Peers order, the keys of the frames
// a point-to-point operation receives from it: none for a peer it only
// sends to. They stay valid until the next operation's call.
func (e *executor) inbound() [][]link.Key {
	req := e.req
	e.keys = slices.Grow(e.keys[:0], len(req.P2P)) // appends below keep the array
	e.peerKeys = resize(e.peerKeys, len(req.Peers()))
	for i, peer := range req.Peers() {
		from := len(e.keys)
		for _, m := range req.P2P {
			if !m.Send && m.Peer == peer {
				e.keys = append(e.keys, link.Key{Kind: transport.PointToPoint, Seq: m.Ordinal, Tag: m.Tag})
			}
		}
		e.peerKeys[i] = e.keys[from:len(e.keys):len(e.keys)]
	}
	return e.peerKeys
}

// p2pTag maps an inbound point-to-point frame to the schedule tag of the
// receiving step it was routed for.
func (e *executor) p2pTag(peer int, h transport.Header) int {
	if i := e.p2pStep(peer, h); i >= 0 {
		return e.req.Schedule.Steps[i].Tag
	}
	return -1
}

// p2pStep returns the receiving step an inbound point-to-point frame
// was routed for, -1 if none.
func (e *executor) p2pStep(peer int, h transport.Header) int {
	for i, m := range e.req.P2P {
		if !m.Send && m.Peer == peer && m.Ordinal == h.Seq && m.Tag == h.Tag {
			return i
		}
	}
	return -1
}

// lendMin is the smallest send whose payload the transport borrows from
// the operation's memory instead of copying: above it the copy costs more
// than the extra message that says the send is done.
const lendMin = 64 << 10

// sendFrame returns the frame step i, a Send, sends of src, its region:
// the region itself, lent, where the connection borrows payloads (lend)
// and the region is large, with the outbox's Sent to give it back; else
// a copy in a pooled payload. A phantom operation sends the phantom
// region.
func (e *executor) sendFrame(i int, src []byte, lend bool) transport.Frame {
	f := transport.Frame{Header: e.req.header(i)}
	switch {
	case e.req.Phantom:
		f.Payload = src
	case len(src) >= lendMin && lend:
		f.Payload, f.Sent = src, e.out.sentFunc(i)
	default:
		f.Payload = transport.GetBuffer(len(src))
		copy(f.Payload, src)
	}
	return f
}
