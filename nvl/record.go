package nvl

import (
	"encoding/binary"
	"fmt"

	"github.com/gocomms/gocomms/transport"
)

// Records are what the rings carry, back to back, each a 48-byte header
// and, for an inline frame, its payload. All integers are little-endian.
//
//	offset size field
//	0      1    Kind: a frame's transport.Kind (1 to 255), or 0 for a control record
//	1      1    what: inline, byAddress or inSlot, or for control records ack or bye
//	2      2    reserved, 0
//	4      4    Tag (for ack: how many by-address payloads are released)
//	8      8    Comm
//	16     8    Seq
//	24     8    Sig
//	32     4    payload length n
//	36     4    reserved, 0
//	40     8    by address: where the payload lies in the sender's memory;
//	            in a slot: the slot's index
//	48     n    inline: the payload
//
// A frame in a slot has its payload in the sender's slab, which the
// receiver lends to its handler and frees once given back. A by-address
// frame's payload stays in the sender's memory until the
// receiver has read it across processes (process_vm_readv) and sent an
// ack; acks come back in the order of the frames, so they only count. A
// bye is the last record a side writes: it has closed, or seen the
// peer's bye, and sends nothing more.
const recordLen = 48

const (
	inline    = 1
	byAddress = 2
	ack       = 3
	bye       = 4
	inSlot    = 5
)

type record struct {
	what    uint8
	header  transport.Header
	n       uint32 // payload length
	address uint64 // byAddress: the payload's address in the sender; inSlot: the slot
}

func (r *record) encode(b *[recordLen]byte) {
	*b = [recordLen]byte{}
	transport.EncodeHeader(b[:], r.header)
	b[1] = r.what
	binary.LittleEndian.PutUint32(b[32:], r.n)
	binary.LittleEndian.PutUint64(b[40:], r.address)
}

// decodeRecord checks a header from the peer, which is trusted no more
// than bytes from a socket: a malformed one ends the connection before
// anything is allocated for it.
func decodeRecord(b *[recordLen]byte, maxPayload int) (record, error) {
	r := record{
		what:    b[1],
		header:  transport.DecodeHeader(b[:]),
		n:       binary.LittleEndian.Uint32(b[32:]),
		address: binary.LittleEndian.Uint64(b[40:]),
	}
	if b[2] != 0 || b[3] != 0 || binary.LittleEndian.Uint32(b[36:]) != 0 {
		return r, fmt.Errorf("%w: reserved bytes set in record %x", ErrProtocol, b[:])
	}
	frame := r.header.Kind != 0
	switch {
	case frame && r.what != inline && r.what != byAddress && r.what != inSlot,
		!frame && r.what != ack && r.what != bye:
		return r, fmt.Errorf("%w: record of kind %d is %d", ErrProtocol, b[0], r.what)
	case int64(r.n) > int64(maxPayload):
		return r, fmt.Errorf("%w: payload of %d bytes exceeds the limit of %d", ErrTooLarge, r.n, maxPayload)
	case r.what == byAddress && (r.n == 0 || r.address == 0),
		r.what == inSlot && (r.n == 0 || r.address >= maxSlots),
		r.what != byAddress && r.what != inSlot && r.address != 0,
		!frame && r.n != 0,
		r.what == ack && r.header.Tag == 0:
		return r, fmt.Errorf("%w: inconsistent record %x", ErrProtocol, b[:])
	}
	return r, nil
}
