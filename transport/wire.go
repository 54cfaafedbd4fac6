package transport

import "encoding/binary"

// HeaderWireLen is the bytes EncodeHeader writes to: the socket
// transports' frame headers (TCP's, shared memory's) start with a Header
// laid out alike, little-endian:
//
//	offset size field
//	0      1    Kind
//	1      3    the transport's own
//	4      4    Tag
//	8      8    Comm
//	16     8    Seq
//	24     8    Sig
const HeaderWireLen = 32

// EncodeHeader writes h into the first HeaderWireLen bytes of b, leaving
// bytes 1 to 3 as they are.
func EncodeHeader(b []byte, h Header) {
	_ = b[HeaderWireLen-1]
	b[0] = byte(h.Kind)
	binary.LittleEndian.PutUint32(b[4:], h.Tag)
	binary.LittleEndian.PutUint64(b[8:], h.Comm)
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], h.Sig)
}

// DecodeHeader reads the Header EncodeHeader wrote into b.
func DecodeHeader(b []byte) Header {
	_ = b[HeaderWireLen-1]
	return Header{
		Kind: Kind(b[0]),
		Tag:  binary.LittleEndian.Uint32(b[4:]),
		Comm: binary.LittleEndian.Uint64(b[8:]),
		Seq:  binary.LittleEndian.Uint64(b[16:]),
		Sig:  binary.LittleEndian.Uint64(b[24:]),
	}
}
