package tcp

import "errors"

// Errors of this transport, beside the transport package's sentinels. A
// connection that fails for one of these reasons reports an error wrapping
// both it and transport.ErrClosed.
var (
	// ErrChecksum reports a frame whose header or payload does not match its
	// CRC32C.
	ErrChecksum = errors.New("transport/tcp: checksum mismatch")
	// ErrProtocol reports bytes that break the wire format: a bad preface
	// or answer, an unknown version, or non-zero reserved bits.
	ErrProtocol = errors.New("transport/tcp: protocol violation")
	// ErrTooLarge reports a payload over the configured maximum, on Send or
	// announced by a peer.
	ErrTooLarge = errors.New("transport/tcp: payload too large")
)
