package rdma

import (
	"encoding/binary"
	"fmt"
	"math"
)

// RemoteBuffer names a range of a peer's registered memory: the range's
// address in the owner's process (as verbs names it), its length, and the
// registration's key. It is a plain value: send it to peers with
// MarshalBinary, or in any encoding of the three fields.
type RemoteBuffer struct {
	Addr uint64
	Len  uint64
	Key  uint64
}

// remoteBufferVersion is the first byte of a marshalled RemoteBuffer.
const remoteBufferVersion = 1

// remoteBufferLen is the length of a marshalled RemoteBuffer: version,
// then Addr, Len and Key, each 8 bytes little-endian.
const remoteBufferLen = 1 + 3*8

// Slice returns n bytes of b at offset off.
func (b RemoteBuffer) Slice(off, n uint64) (RemoteBuffer, error) {
	if off > b.Len || n > b.Len-off {
		return RemoteBuffer{}, fmt.Errorf("rdma: slice [%d, %d+%d) of %v: %w", off, off, n, b, ErrBounds)
	}
	return RemoteBuffer{Addr: b.Addr + off, Len: n, Key: b.Key}, nil
}

func (b RemoteBuffer) String() string {
	return fmt.Sprintf("remote key %#x [%#x, +%d)", b.Key, b.Addr, b.Len)
}

// AppendBinary appends b's wire form to dst: a version byte (1), then Addr,
// Len and Key as 8-byte little-endian integers, 25 bytes in all.
func (b RemoteBuffer) AppendBinary(dst []byte) ([]byte, error) {
	dst = append(dst, remoteBufferVersion)
	dst = binary.LittleEndian.AppendUint64(dst, b.Addr)
	dst = binary.LittleEndian.AppendUint64(dst, b.Len)
	return binary.LittleEndian.AppendUint64(dst, b.Key), nil
}

// MarshalBinary returns b's wire form (see AppendBinary).
func (b RemoteBuffer) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, remoteBufferLen))
}

// UnmarshalBinary decodes what MarshalBinary wrote. It rejects, with an
// error wrapping ErrInvalid, input of another length or version, a range
// that wraps around the address space, and the key 0, which no
// registration has.
func (b *RemoteBuffer) UnmarshalBinary(data []byte) error {
	if len(data) != remoteBufferLen {
		return fmt.Errorf("rdma: remote buffer of %d bytes, want %d: %w", len(data), remoteBufferLen, ErrInvalid)
	}
	if data[0] != remoteBufferVersion {
		return fmt.Errorf("rdma: remote buffer version %d, want %d: %w", data[0], remoteBufferVersion, ErrInvalid)
	}
	v := RemoteBuffer{
		Addr: binary.LittleEndian.Uint64(data[1:]),
		Len:  binary.LittleEndian.Uint64(data[9:]),
		Key:  binary.LittleEndian.Uint64(data[17:]),
	}
	if v.Len > math.MaxUint64-v.Addr {
		return fmt.Errorf("rdma: remote buffer %v wraps around the address space: %w", v, ErrInvalid)
	}
	if v.Key == 0 {
		return fmt.Errorf("rdma: remote buffer %v: key 0 is never registered: %w", v, ErrInvalid)
	}
	*b = v
	return nil
}
