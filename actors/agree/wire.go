package agree

import (
	"encoding/binary"
	"errors"
	"slices"
)

// errMalformed reports a message that does not decode.
var errMalformed = errors.New("agree: malformed message")

// Encode returns m's bytes, without From and To, which its link carries.
//
//	kind(1) ballot(uvarint) accepted ballot(uvarint)
//	value flags(8) value failed(list) flags(8) failed(list)
//
// A list is a uvarint count, then that many uvarint ranks.
func Encode(m Msg) []byte {
	b := []byte{byte(m.Kind)}
	b = binary.AppendUvarint(b, m.Ballot)
	b = binary.AppendUvarint(b, m.AcceptedBallot)
	b = binary.LittleEndian.AppendUint64(b, m.Value.Flags)
	b = appendRanks(b, m.Value.Failed)
	b = binary.LittleEndian.AppendUint64(b, m.Flags)
	return appendRanks(b, m.Failed)
}

func appendRanks(b []byte, ranks []int) []byte {
	b = binary.AppendUvarint(b, uint64(len(ranks)))
	for _, r := range ranks {
		b = binary.AppendUvarint(b, uint64(r))
	}
	return b
}

// Decode parses a message from rank from to rank to of a communicator of
// size ranks, rejecting unknown kinds, ranks out of range and trailing
// bytes.
func Decode(from, to, size int, p []byte) (Msg, error) {
	if len(p) == 0 || Kind(p[0]) < Prepare || Kind(p[0]) > Nack {
		return Msg{}, errMalformed
	}
	m := Msg{Kind: Kind(p[0]), From: from, To: to}
	d := decoder{p: p[1:], size: size}
	m.Ballot = d.uvarint()
	m.AcceptedBallot = d.uvarint()
	m.Value.Flags = d.uint64()
	m.Value.Failed = d.ranks()
	m.Flags = d.uint64()
	m.Failed = d.ranks()
	if d.err || len(d.p) != 0 {
		return Msg{}, errMalformed
	}
	return m, nil
}

type decoder struct {
	p    []byte
	size int
	err  bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.p) < 8 {
		d.err = true
		return 0
	}
	v := binary.LittleEndian.Uint64(d.p)
	d.p = d.p[8:]
	return v
}

func (d *decoder) ranks() []int {
	n := d.uvarint()
	if d.err || n > uint64(d.size) {
		d.err = true
		return nil
	}
	var rs []int
	for range n {
		r := d.uvarint()
		if d.err || r >= uint64(d.size) {
			d.err = true
			return nil
		}
		rs = append(rs, int(r))
	}
	if !slices.IsSorted(rs) {
		d.err = true
	}
	return rs
}
