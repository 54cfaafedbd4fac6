package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/internal/names"
)

// The software provider's wire format; doc.go and docs/RDMA.md show it
// byte by byte. All integers are little-endian.

// errProtocol reports bytes from a peer that break the wire format. It
// always ends the transport, wrapped in ErrBroken.
var errProtocol = errors.New("protocol violation")

// protocol is a provider's side channel as its hellos and answers name
// it: the magic that opens them, which keeps the two providers'
// connections apart, the version it speaks, and the last answer it gives.
// Both providers' hellos and answers start with the same fields, which
// its methods encode; the verbs provider's go on after them
// (verbs_wire.go).
type protocol struct {
	magic   [8]byte
	version uint16
	last    answer
}

var tcpProtocol = protocol{magic: [8]byte{'G', 'C', 'R', 'D', 'M', 'A', 0, 0}, version: 1, last: answerWrongPeer}

const (
	helloLen     = 32
	answerLen    = 16
	reqHeaderLen = 56
	repHeaderLen = 24
)

// flagNotify, in a request's flags byte, asks the responder to count a
// write for WaitForWrite once its payload has landed.
const flagNotify = 1

// hello is what a connecting transport sends first.
type hello struct {
	version uint16
	to      uint64 // the nonce of the Address dialed
	from    uint64 // the nonce of the dialer's own Address, 0 if it has none
}

func (p *protocol) putHello(b *[helloLen]byte, h hello) {
	copy(b[:8], p.magic[:])
	binary.LittleEndian.PutUint16(b[8:], h.version)
	clear(b[10:16])
	binary.LittleEndian.PutUint64(b[16:], h.to)
	binary.LittleEndian.PutUint64(b[24:], h.from)
}

// parseHello decodes a hello of any version, so that the acceptor can say
// which version it speaks; only of its own version does it check the
// reserved bytes.
func (p *protocol) parseHello(b *[helloLen]byte) (hello, error) {
	if [8]byte(b[:8]) != p.magic {
		return hello{}, fmt.Errorf("hello starts with %q, not %q: %w", b[:8], p.magic[:], errProtocol)
	}
	h := hello{
		version: binary.LittleEndian.Uint16(b[8:]),
		to:      binary.LittleEndian.Uint64(b[16:]),
		from:    binary.LittleEndian.Uint64(b[24:]),
	}
	if h.version == p.version && !allZero(b[10:16]) {
		return hello{}, fmt.Errorf("hello has reserved bytes %x: %w", b[10:16], errProtocol)
	}
	return h, nil
}

// answer is the listener's reply to a hello.
type answer uint8

const (
	answerAccepted  answer = 0 // the connection carries requests from now on
	answerStale     answer = 1 // the hello names another Address: a stale one
	answerBusy      answer = 2 // another peer is connected already
	answerVersion   answer = 3 // the hello's version is not spoken here
	answerWrongPeer answer = 4 // this transport connected to another peer
)

var answerNames = [...]string{
	answerAccepted:  "accepted",
	answerStale:     "refused: the address is stale (its transport was closed, and another bound its port)",
	answerBusy:      "refused: another peer is connected to that transport already",
	answerVersion:   "refused: protocol version not supported",
	answerWrongPeer: "refused: that transport connected to another peer than this one",
}

func (a answer) String() string { return names.Numbered(a, "answer ", answerNames[:]) }

// putAnswer writes a, from a listener that speaks version.
func (p *protocol) putAnswer(b *[answerLen]byte, version uint16, a answer) {
	copy(b[:8], p.magic[:])
	binary.LittleEndian.PutUint16(b[8:], version)
	b[10] = byte(a)
	clear(b[11:])
}

// parseAnswer decodes an answer, and the version its listener speaks.
func (p *protocol) parseAnswer(b *[answerLen]byte) (version uint16, a answer, err error) {
	if [8]byte(b[:8]) != p.magic {
		return 0, 0, fmt.Errorf("answer starts with %q, not %q: %w", b[:8], p.magic[:], errProtocol)
	}
	a = answer(b[10])
	if a > p.last || !allZero(b[11:]) {
		return 0, 0, fmt.Errorf("answer with status %d and reserved bytes %x: %w", b[10], b[11:], errProtocol)
	}
	return binary.LittleEndian.Uint16(b[8:]), a, nil
}

// request is a request header; a write's payload of n bytes follows it.
type request struct {
	op     opKind
	notify bool
	id     uint64
	addr   uint64
	n      uint64
	key    uint64
	a, b   uint64
}

func putRequest(b *[reqHeaderLen]byte, r request) {
	b[0] = byte(r.op)
	b[1] = 0
	if r.notify {
		b[1] = flagNotify
	}
	clear(b[2:8])
	binary.LittleEndian.PutUint64(b[8:], r.id)
	binary.LittleEndian.PutUint64(b[16:], r.addr)
	binary.LittleEndian.PutUint64(b[24:], r.n)
	binary.LittleEndian.PutUint64(b[32:], r.key)
	binary.LittleEndian.PutUint64(b[40:], r.a)
	binary.LittleEndian.PutUint64(b[48:], r.b)
}

// parseRequest decodes a request header and checks every field: the id
// must be wantID, as requests are numbered from 1 without gaps, and no
// field may be set that the op does not use. What it accepts, putRequest
// encodes back to the same bytes.
func parseRequest(b *[reqHeaderLen]byte, wantID uint64) (request, error) {
	r := request{
		op:     opKind(b[0]),
		notify: b[1] == flagNotify,
		id:     binary.LittleEndian.Uint64(b[8:]),
		addr:   binary.LittleEndian.Uint64(b[16:]),
		n:      binary.LittleEndian.Uint64(b[24:]),
		key:    binary.LittleEndian.Uint64(b[32:]),
		a:      binary.LittleEndian.Uint64(b[40:]),
		b:      binary.LittleEndian.Uint64(b[48:]),
	}
	var bad string
	switch {
	case r.id != wantID:
		bad = fmt.Sprintf("id %d, want %d", r.id, wantID)
	case !allZero(b[2:8]):
		bad = fmt.Sprintf("reserved bytes %x", b[2:8])
	case r.op < opWrite || r.op > opCompareAndSwap:
		bad = fmt.Sprintf("unknown op %d", b[0])
	case b[1] != 0 && (r.op != opWrite || b[1] != flagNotify):
		bad = fmt.Sprintf("flags %#x for a %v", b[1], r.op)
	case (r.op == opWrite || r.op == opRead) && r.n > maxTransfer:
		bad = fmt.Sprintf("%v of %d bytes, over the limit of %d", r.op, r.n, uint64(maxTransfer))
	case (r.op == opFetchAdd || r.op == opCompareAndSwap) && r.n != 8:
		bad = fmt.Sprintf("%v of %d bytes", r.op, r.n)
	case r.op != opCompareAndSwap && r.b != 0 || (r.op == opWrite || r.op == opRead) && r.a != 0:
		bad = fmt.Sprintf("operands %#x, %#x for a %v", r.a, r.b, r.op)
	}
	if bad != "" {
		return request{}, fmt.Errorf("request %d: %s: %w", wantID, bad, errProtocol)
	}
	return r, nil
}

// status is a reply's verdict.
type status uint8

const (
	statusOK           status = 0 // done; a read's payload follows
	statusUnregistered status = 1 // the key is not registered
	statusBounds       status = 2 // the range is not inside the registration
	statusMisaligned   status = 3 // an atomic's word is not 8-byte aligned
	statusLast                = statusMisaligned
)

// reply is a reply header: a successful read's payload follows it.
type reply struct {
	status status
	id     uint64
	value  uint64 // atomics: the old value; a successful read: its length
}

func putReply(b *[repHeaderLen]byte, r reply) {
	b[0] = byte(r.status)
	clear(b[1:8])
	binary.LittleEndian.PutUint64(b[8:], r.id)
	binary.LittleEndian.PutUint64(b[16:], r.value)
}

// parseReply decodes a reply header for the request it must answer: o,
// numbered id. What it accepts, putReply encodes back to the same bytes.
func parseReply(b *[repHeaderLen]byte, id uint64, o *op) (reply, error) {
	r := reply{
		status: status(b[0]),
		id:     binary.LittleEndian.Uint64(b[8:]),
		value:  binary.LittleEndian.Uint64(b[16:]),
	}
	var bad string
	switch {
	case r.id != id:
		bad = fmt.Sprintf("id %d", r.id)
	case r.status > statusLast || !allZero(b[1:8]):
		bad = fmt.Sprintf("status %d, reserved bytes %x", b[0], b[1:8])
	case r.status == statusMisaligned && o.kind != opFetchAdd && o.kind != opCompareAndSwap:
		bad = "misaligned, for an op that is not atomic"
	case r.status != statusOK && r.value != 0:
		bad = fmt.Sprintf("status %d with value %#x", r.status, r.value)
	case r.status == statusOK && o.kind == opWrite && r.value != 0:
		bad = fmt.Sprintf("value %#x", r.value)
	case r.status == statusOK && o.kind == opRead && r.value != uint64(len(o.dst)):
		bad = fmt.Sprintf("a payload of %d bytes", r.value)
	}
	if bad != "" {
		return reply{}, fmt.Errorf("reply to request %d (%v): %s: %w", id, o, bad, errProtocol)
	}
	return r, nil
}

// err returns the error of an op whose reply has status s, or nil.
func (s status) err(o *op) error {
	switch s {
	case statusOK:
		return nil
	case statusUnregistered:
		return fmt.Errorf("%v: the peer has no registration with key %#x (never had, or deregistered): %w",
			o, o.remote.Key, ErrUnregistered)
	case statusBounds:
		return fmt.Errorf("%v: not inside the peer's registration with key %#x: %w", o, o.remote.Key, ErrBounds)
	}
	return fmt.Errorf("%v: the word is not 8-byte aligned at the peer: %w", o, ErrBounds)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
