package tcp

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/gocomms/gocomms/transport"
)

// headerLen is the size of a frame header on the wire; see doc.go for the
// layout.
const headerLen = 44

// castagnoli selects CRC32C; hash/crc32 computes it with the CPU's CRC
// instructions where there are some. The table is written once, here, and
// only read afterwards.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// flagUnchecked, in header byte 1, says the payload carries no CRC32C:
// its sum field is zero and the receiver checks nothing.
const flagUnchecked = 1

// putHeader encodes h, the payload length n and the payload's CRC32C sum
// (or, unchecked, no sum) into b, which must be headerLen bytes long, and
// seals them with the header's own CRC32C.
func putHeader(b []byte, h transport.Header, n int, sum uint32, checked bool) {
	_ = b[headerLen-1]
	transport.EncodeHeader(b, h)
	b[1], b[2], b[3] = 0, 0, 0
	if !checked {
		b[1], sum = flagUnchecked, 0
	}
	binary.LittleEndian.PutUint32(b[32:], uint32(n))
	binary.LittleEndian.PutUint32(b[36:], sum)
	binary.LittleEndian.PutUint32(b[40:], crc32.Checksum(b[:40], castagnoli))
}

// parseHeader decodes a header encoded by putHeader. It checks the
// header's CRC32C first, so that a corrupted length is never believed.
func parseHeader(b *[headerLen]byte) (h transport.Header, n, sum uint32, checked bool, err error) {
	if got, want := crc32.Checksum(b[:40], castagnoli), binary.LittleEndian.Uint32(b[40:]); got != want {
		return h, 0, 0, false, fmt.Errorf("header CRC32C %#08x, header says %#08x: %w", got, want, ErrChecksum)
	}
	sum = binary.LittleEndian.Uint32(b[36:])
	if b[1]&^flagUnchecked|b[2]|b[3] != 0 || b[1] == flagUnchecked && sum != 0 {
		return h, 0, 0, false, fmt.Errorf("reserved header bytes %x are not zero: %w", b[1:4], ErrProtocol)
	}
	return transport.DecodeHeader(b[:]), binary.LittleEndian.Uint32(b[32:]), sum, b[1] == 0, nil
}

// A payload over firstStep bytes is read into a buffer of firstStep
// bytes, replaced by one growFactor times larger each time it fills: what
// a frame holds is at most growFactor times what has arrived of it, and
// the copies cost at most a third of the payload once more.
const (
	firstStep  = 1 << 20
	growFactor = 4
)

// grow returns a pooled buffer of n bytes holding p, which it gives back.
func grow(p []byte, n int) []byte {
	q := transport.GetBuffer(n)
	copy(q, p)
	transport.PutBuffer(p)
	return q
}

// frameReader decodes frames from a byte stream into pooled payloads. A
// read that fails with an error that says to try again (again) leaves
// the frame read so far in the frameReader, for the next call to go on
// with: a poller reads the socket without blocking, and the reader
// goroutine is woken from a blocking read to let it.
type frameReader struct {
	r      *bufio.Reader
	max    uint32 // largest payload believed; a larger one fails unallocated
	frames uint64 // frames decoded so far, to name a bad one
	again  func(error) bool
	hdr    [headerLen]byte
	have   int // bytes of hdr read

	// The frame whose payload is being read, once its header is in.
	inPayload bool
	h         transport.Header
	n, sum    uint32
	checked   bool
	p         []byte
	off       int
	crc       uint32
}

// next returns the next frame. It returns io.EOF only when the stream ends
// cleanly between frames; a stream cut inside a frame is an error wrapping
// io.ErrUnexpectedEOF.
func (fr *frameReader) next() (transport.Frame, error) {
	if !fr.inPayload {
		for fr.have < headerLen {
			k, err := fr.r.Read(fr.hdr[fr.have:])
			fr.have += k
			switch {
			case err == nil:
			case fr.retry(err):
				return transport.Frame{}, err
			case err == io.EOF && fr.have == 0:
				return transport.Frame{}, err // io.EOF stays bare: a clean end
			case fr.have < headerLen:
				return transport.Frame{}, fmt.Errorf("frame %d: header cut short: %w", fr.frames, unexpected(err))
			}
		}
		h, n, sum, checked, err := parseHeader(&fr.hdr)
		if err != nil {
			return transport.Frame{}, fmt.Errorf("frame %d: %w", fr.frames, err)
		}
		if n > fr.max {
			return transport.Frame{}, fmt.Errorf("frame %d (comm %d, seq %d): payload of %d bytes exceeds the limit of %d: %w",
				fr.frames, h.Comm, h.Seq, n, fr.max, ErrTooLarge)
		}
		// A large payload is read into buffers grown as its bytes arrive,
		// so that a header promising more than ever comes costs only what
		// came.
		fr.inPayload, fr.h, fr.n, fr.sum, fr.checked = true, h, n, sum, checked
		fr.p, fr.off, fr.crc = transport.GetBuffer(int(min(n, firstStep))), 0, 0
	}
	for fr.off < int(fr.n) {
		if fr.off == len(fr.p) {
			fr.p = grow(fr.p, min(int(fr.n), len(fr.p)*growFactor))
		}
		k, err := fr.r.Read(fr.p[fr.off:])
		if fr.checked { // each piece as it arrives, while it is in cache
			fr.crc = crc32.Update(fr.crc, castagnoli, fr.p[fr.off:fr.off+k])
		}
		fr.off += k
		if err != nil && fr.off < int(fr.n) {
			if fr.retry(err) {
				return transport.Frame{}, err
			}
			fr.drop()
			return transport.Frame{}, fmt.Errorf("frame %d (comm %d, seq %d): payload cut short after %d of %d bytes: %w",
				fr.frames, fr.h.Comm, fr.h.Seq, fr.off, fr.n, unexpected(err))
		}
	}
	p := fr.p
	if fr.checked && fr.crc != fr.sum {
		fr.drop()
		return transport.Frame{}, fmt.Errorf("frame %d (comm %d, seq %d): payload CRC32C %#08x, header says %#08x: %w",
			fr.frames, fr.h.Comm, fr.h.Seq, fr.crc, fr.sum, ErrChecksum)
	}
	f := transport.Frame{Header: fr.h, Payload: p}
	fr.p, fr.inPayload, fr.have = nil, false, 0
	fr.frames++
	return f, nil
}

// retry reports whether err says to read again later, the frame so far
// kept.
func (fr *frameReader) retry(err error) bool { return fr.again != nil && fr.again(err) }

// drop gives back the payload of a frame that failed.
func (fr *frameReader) drop() {
	transport.PutBuffer(fr.p)
	fr.p, fr.inPayload = nil, false
}

// unexpected turns a clean end of stream inside a frame into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
