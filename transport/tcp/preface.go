package tcp

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/gocomms/gocomms/transport"
)

// The connection preface; see doc.go for the layout.
const (
	magic      = "GOCOMMS\x00"
	version    = 1
	prefaceLen = 20 // magic, version, flags, hello length, CRC32C
	answerLen  = 12 // magic, version, status
)

// Answer statuses.
const (
	statusAccepted           = 0
	statusUnsupportedVersion = 1
)

// appendPreface appends the dialer's preface carrying hello to b.
func appendPreface(b, hello []byte) []byte {
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, 0) // flags
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hello)))
	sum := crc32.Update(crc32.Checksum(b[start:], castagnoli), castagnoli, hello)
	b = binary.LittleEndian.AppendUint32(b, sum)
	return append(b, hello...)
}

// errVersion reports a preface of another version; the acceptor answers it
// with its own version so that the dialer can say what went wrong.
type errVersion struct{ got uint16 }

func (e errVersion) Error() string {
	return fmt.Sprintf("preface of version %d, want %d: %v", e.got, version, ErrProtocol)
}

func (e errVersion) Unwrap() error { return ErrProtocol }

// readPreface reads a dialer's preface and returns its hello.
func readPreface(r io.Reader) ([]byte, error) {
	var b [prefaceLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, fmt.Errorf("reading preface: %w", err)
	}
	if string(b[:8]) != magic {
		return nil, fmt.Errorf("preface starts %q, not a gocomms dialer: %w", b[:8], ErrProtocol)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != version {
		return nil, errVersion{v}
	}
	if flags := binary.LittleEndian.Uint16(b[10:]); flags != 0 {
		return nil, fmt.Errorf("preface flags %#04x, want 0: %w", flags, ErrProtocol)
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if n > transport.MaxHello {
		return nil, fmt.Errorf("hello of %d bytes exceeds %d: %w", n, transport.MaxHello, ErrProtocol)
	}
	hello := make([]byte, n)
	if _, err := io.ReadFull(r, hello); err != nil {
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	sum := crc32.Update(crc32.Checksum(b[:16], castagnoli), castagnoli, hello)
	if want := binary.LittleEndian.Uint32(b[16:]); sum != want {
		return nil, fmt.Errorf("preface CRC32C %#08x, preface says %#08x: %w", sum, want, ErrChecksum)
	}
	return hello, nil
}

// appendAnswer appends the acceptor's answer to b.
func appendAnswer(b []byte, status uint16) []byte {
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	return binary.LittleEndian.AppendUint16(b, status)
}

// parseAnswer checks the acceptor's answer to our preface.
func parseAnswer(b *[answerLen]byte) error {
	if string(b[:8]) != magic {
		return fmt.Errorf("answer starts %q, not a gocomms listener: %w", b[:8], ErrProtocol)
	}
	v, status := binary.LittleEndian.Uint16(b[8:]), binary.LittleEndian.Uint16(b[10:])
	switch {
	case status == statusUnsupportedVersion:
		return fmt.Errorf("listener speaks version %d, not %d: %w", v, version, ErrProtocol)
	case status != statusAccepted:
		return fmt.Errorf("listener answered status %d: %w", status, ErrProtocol)
	case v != version:
		return fmt.Errorf("listener accepted with version %d, want %d: %w", v, version, ErrProtocol)
	}
	return nil
}
