package rdma

import (
	"encoding/binary"
	"fmt"

	"github.com/gocomms/gocomms/rdma/verbs"
)

// The verbs provider's side channel: a TCP connection per direction of
// operations, as the tcp provider has, that carries the handshake which
// pairs the two queue pairs and then the few messages that map keys to
// the device's rkeys. Data never crosses it. doc.go and docs/RDMA.md show
// it byte by byte; all integers are little-endian, except inside the
// queue pairs' endpoints, which package verbs encodes (big-endian).

// verbsProtocol's magic opens every verbs hello and answer; a tcp
// listener hangs up on it, as on anything that is not its own hello.
var verbsProtocol = protocol{magic: [8]byte{'G', 'C', 'V', 'E', 'R', 'B', 'S', 0}, version: 1, last: answerQPFailed}

const (
	verbsHelloLen  = 112
	verbsAnswerLen = 64
	ctlLen         = 32
)

// verbsHello is what a connecting verbs transport sends first: a hello,
// then the queue pairs. Its last 16 bytes are reserved: zero, and checked
// to be.
type verbsHello struct {
	hello
	qp     verbs.Endpoint // the dialer's queue pair
	paired verbs.Endpoint // the queue pair the dialer's is connected to already, or zero
}

// notifyTarget is 8 bytes of a transport's memory that its peer's
// zero-length notifying writes name, since a write with immediate data
// must name some registered memory of the peer even to write nothing.
type notifyTarget struct {
	addr uint64
	rkey uint32
}

func putVerbsHello(b *[verbsHelloLen]byte, h verbsHello) error {
	verbsProtocol.putHello((*[helloLen]byte)(b[:helloLen]), h.hello)
	if err := putEndpoint(b[32:64], h.qp); err != nil {
		return err
	}
	if err := putEndpoint(b[64:96], h.paired); err != nil {
		return err
	}
	clear(b[96:])
	return nil
}

// parseVerbsHello decodes a hello of any version, so that the listener
// can say which version it speaks; of its own it checks every field.
func parseVerbsHello(b *[verbsHelloLen]byte) (verbsHello, error) {
	h, err := verbsProtocol.parseHello((*[helloLen]byte)(b[:helloLen]))
	if err != nil || h.version != verbsProtocol.version {
		return verbsHello{hello: h}, err
	}
	if !allZero(b[96:]) {
		return verbsHello{}, fmt.Errorf("hello has reserved bytes %x: %w", b[96:], errProtocol)
	}
	vh := verbsHello{hello: h}
	if vh.qp, err = parseEndpoint(b[32:64], false); err == nil {
		vh.paired, err = parseEndpoint(b[64:96], true)
	}
	if err != nil {
		return verbsHello{}, fmt.Errorf("hello: %w: %w", err, errProtocol)
	}
	return vh, nil
}

// answerQPFailed is an answer only a verbs listener gives: it accepted
// the hello, but its queue pair would not connect to the dialer's.
const answerQPFailed answer = 5

// verbsAnswer is the listener's reply to a hello: an answer, then, if it
// accepted, its queue pair and notify target.
type verbsAnswer struct {
	version uint16
	verdict answer
	qp      verbs.Endpoint // the listener's queue pair; zero unless accepted
	notify  notifyTarget   // zero unless accepted
}

func putVerbsAnswer(b *[verbsAnswerLen]byte, a verbsAnswer) error {
	verbsProtocol.putAnswer((*[answerLen]byte)(b[:answerLen]), a.version, a.verdict)
	if err := putEndpoint(b[16:48], a.qp); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(b[48:], a.notify.addr)
	binary.LittleEndian.PutUint32(b[56:], a.notify.rkey)
	clear(b[60:])
	return nil
}

func parseVerbsAnswer(b *[verbsAnswerLen]byte) (verbsAnswer, error) {
	version, verdict, err := verbsProtocol.parseAnswer((*[answerLen]byte)(b[:answerLen]))
	if err != nil {
		return verbsAnswer{}, err
	}
	a := verbsAnswer{
		version: version,
		verdict: verdict,
		notify:  notifyTarget{addr: binary.LittleEndian.Uint64(b[48:]), rkey: binary.LittleEndian.Uint32(b[56:])},
	}
	bad := !allZero(b[60:])
	if !bad && a.verdict == answerAccepted {
		if a.qp, err = parseEndpoint(b[16:48], false); err != nil {
			return verbsAnswer{}, fmt.Errorf("answer: %w: %w", err, errProtocol)
		}
	} else if !allZero(b[16:60]) {
		bad = true
	}
	if bad {
		return verbsAnswer{}, fmt.Errorf("answer with status %d and bytes %x: %w", b[10], b[16:], errProtocol)
	}
	return a, nil
}

// putEndpoint encodes e in 32 bytes, or zeros for the zero Endpoint.
func putEndpoint(b []byte, e verbs.Endpoint) error {
	if e == (verbs.Endpoint{}) {
		clear(b[:verbs.EndpointSize])
		return nil
	}
	_, err := e.AppendBinary(b[:0])
	return err
}

// parseEndpoint decodes 32 bytes that putEndpoint wrote; all zeros are the
// zero Endpoint where zeroOK.
func parseEndpoint(b []byte, zeroOK bool) (verbs.Endpoint, error) {
	if zeroOK && allZero(b[:verbs.EndpointSize]) {
		return verbs.Endpoint{}, nil
	}
	var e verbs.Endpoint
	err := e.UnmarshalBinary(b[:verbs.EndpointSize])
	return e, err
}

// ctlKind is the type of a side-channel message after the handshake.
type ctlKind uint8

const (
	// ctlResolve asks the listener for the rkey of a key (dialer to listener).
	ctlResolve ctlKind = 1
	// ctlResolved answers a resolve, in the order they came (listener to dialer).
	ctlResolved ctlKind = 2
	// ctlRevoke tells the dialer that a key it resolved is being
	// deregistered: it must not use the rkey again (listener to dialer).
	ctlRevoke ctlKind = 3
	// ctlReleased says that the dialer has dropped a revoked key and that
	// no operation of its on it is in flight any more (dialer to listener).
	ctlReleased ctlKind = 4
	// ctlCredit gives the dialer back n receives that the listener has
	// posted again: n more notifying writes may go out (listener to
	// dialer).
	ctlCredit ctlKind = 5
)

// Statuses of a ctlResolved.
const (
	resolvedOK           = 0 // the rkey, address and length follow
	resolvedUnregistered = 1 // no registration has the key
	resolvedRefused      = 2 // the device would not register the memory
	resolvedLast         = resolvedRefused
)

// ctl is a side-channel message after the handshake:
//
//	0  1  kind: 1 resolve, 2 resolved, 3 revoke, 4 released, 5 credit
//	1  1  resolved: status; otherwise 0
//	2  2  zero
//	4  4  resolved, status 0: rkey; otherwise 0
//	8  8  key, non-zero; credit: 0
//	16 8  resolved, status 0: the registration's address; otherwise 0
//	24 8  resolved, status 0: its length; credit: receives, 1 to 128; otherwise 0
type ctl struct {
	kind   ctlKind
	status uint8
	rkey   uint32
	key    uint64
	addr   uint64
	n      uint64
}

func putCtl(b *[ctlLen]byte, m ctl) {
	b[0], b[1] = byte(m.kind), m.status
	clear(b[2:4])
	binary.LittleEndian.PutUint32(b[4:], m.rkey)
	binary.LittleEndian.PutUint64(b[8:], m.key)
	binary.LittleEndian.PutUint64(b[16:], m.addr)
	binary.LittleEndian.PutUint64(b[24:], m.n)
}

// parseCtl decodes a message and checks every field against its kind;
// toDialer says which end reads it. What it accepts, putCtl encodes back
// to the same bytes.
func parseCtl(b *[ctlLen]byte, toDialer bool) (ctl, error) {
	m := ctl{
		kind:   ctlKind(b[0]),
		status: b[1],
		rkey:   binary.LittleEndian.Uint32(b[4:]),
		key:    binary.LittleEndian.Uint64(b[8:]),
		addr:   binary.LittleEndian.Uint64(b[16:]),
		n:      binary.LittleEndian.Uint64(b[24:]),
	}
	var bad string
	switch {
	case toDialer && m.kind != ctlResolved && m.kind != ctlRevoke && m.kind != ctlCredit,
		!toDialer && m.kind != ctlResolve && m.kind != ctlReleased:
		bad = fmt.Sprintf("kind %d", b[0])
	case (m.key == 0) != (m.kind == ctlCredit) || !allZero(b[2:4]):
		bad = fmt.Sprintf("key %#x, reserved bytes %x", m.key, b[2:4])
	case m.kind == ctlCredit && (m.n == 0 || m.n > verbsRecvDepth || m.status != 0 || m.rkey != 0 || m.addr != 0):
		bad = fmt.Sprintf("credit of %d receives", m.n)
	case m.kind != ctlResolved && m.kind != ctlCredit && (m.status != 0 || m.rkey != 0 || m.addr != 0 || m.n != 0):
		bad = "fields its kind has not"
	case m.kind == ctlResolved && m.status > resolvedLast:
		bad = fmt.Sprintf("status %d", m.status)
	case m.kind == ctlResolved && m.status != resolvedOK && (m.rkey != 0 || m.addr != 0 || m.n != 0):
		bad = fmt.Sprintf("status %d with a registration", m.status)
	case m.kind == ctlResolved && m.status == resolvedOK && m.n > ^m.addr:
		bad = fmt.Sprintf("registration [%#x, +%d)", m.addr, m.n)
	}
	if bad != "" {
		return ctl{}, fmt.Errorf("side-channel message %x: %s: %w", b[:], bad, errProtocol)
	}
	return m, nil
}
