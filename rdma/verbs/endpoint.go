package verbs

import (
	"encoding/binary"
	"fmt"
)

// Endpoint is what each side of a reliable connection tells the other
// before either can connect: QP.Endpoint makes the local one, the caller
// carries the two across by whatever means it has (a store, a socket), and
// QP.Connect takes both. It arrives from the network, so UnmarshalBinary
// checks every field.
type Endpoint struct {
	QPN uint32 // queue pair number: 24 bits
	PSN uint32 // first packet sequence number this side sends: 24 bits
	LID uint16 // port's local identifier on InfiniBand; 0 on RoCE
	GID GID    // port's global identifier, zero if unused (InfiniBand only)
	// Port is the device port (from 1); GIDIndex the slot of GID in its
	// table, which the side that owns it uses as its source.
	Port     uint8
	GIDIndex uint8
	// MTU is the port's active MTU: the connection uses the lesser of the
	// two sides'.
	MTU MTU
	// RdAtomic is how many reads and atomics this side answers at once:
	// the peer keeps no more than that outstanding.
	RdAtomic uint8
}

// EndpointSize is the length of an encoded Endpoint.
const EndpointSize = 32

const (
	endpointMagic   = 'V'
	endpointVersion = 1
	maxPSN          = 1<<24 - 1
)

// MarshalBinary encodes e in EndpointSize bytes (big-endian).
func (e Endpoint) MarshalBinary() ([]byte, error) {
	return e.AppendBinary(make([]byte, 0, EndpointSize))
}

// AppendBinary appends e's encoding to b.
func (e Endpoint) AppendBinary(b []byte) ([]byte, error) {
	if err := e.validate(); err != nil {
		return b, err
	}
	b = append(b, endpointMagic, endpointVersion)
	b = binary.BigEndian.AppendUint32(b, e.QPN)
	b = binary.BigEndian.AppendUint32(b, e.PSN)
	b = binary.BigEndian.AppendUint16(b, e.LID)
	b = append(b, e.GID[:]...)
	return append(b, e.Port, e.GIDIndex, uint8(e.MTU), e.RdAtomic), nil
}

// UnmarshalBinary decodes what MarshalBinary made, and rejects anything
// else with ErrInvalid: a peer's bytes are not trusted.
func (e *Endpoint) UnmarshalBinary(b []byte) error {
	if len(b) != EndpointSize {
		return invalid("endpoint: %d bytes, want %d", len(b), EndpointSize)
	}
	if b[0] != endpointMagic || b[1] != endpointVersion {
		return invalid("endpoint: header %#x %#x, want %#x %#x", b[0], b[1],
			endpointMagic, endpointVersion)
	}
	var d Endpoint
	d.QPN = binary.BigEndian.Uint32(b[2:])
	d.PSN = binary.BigEndian.Uint32(b[6:])
	d.LID = binary.BigEndian.Uint16(b[10:])
	copy(d.GID[:], b[12:28])
	d.Port, d.GIDIndex, d.MTU, d.RdAtomic = b[28], b[29], MTU(b[30]), b[31]
	if err := d.validate(); err != nil {
		return err
	}
	*e = d
	return nil
}

func (e Endpoint) validate() error {
	switch {
	case e.QPN > maxPSN:
		return invalid("endpoint: QPN %#x is over 24 bits", e.QPN)
	case e.PSN > maxPSN:
		return invalid("endpoint: PSN %#x is over 24 bits", e.PSN)
	case e.Port == 0:
		return invalid("endpoint: port 0 (ports count from 1)")
	case e.MTU.Bytes() == 0:
		return invalid("endpoint: MTU code %d is not one of 1 (256) to 5 (4096)", e.MTU)
	case e.RdAtomic == 0:
		return invalid("endpoint: answers no reads or atomics (RdAtomic 0)")
	case e.LID == 0 && e.GID.IsZero():
		return invalid("endpoint: neither a LID nor a GID to reach it by")
	}
	return nil
}

func (e Endpoint) String() string {
	return fmt.Sprintf("qpn=%#x psn=%#x lid=%d gid=%v port=%d gid-index=%d mtu=%v rd-atomic=%d",
		e.QPN, e.PSN, e.LID, e.GID, e.Port, e.GIDIndex, e.MTU, e.RdAtomic)
}
