package rdma

import (
	"encoding/binary"
	"fmt"
)

// Address is what Bind returns and Connect takes: an opaque byte string
// that tells a peer how to reach a transport. Exchange it out of band (a
// store, a file, an RPC) as it is; it is valid for as long as the transport
// that bound it is open.
//
// It is an envelope, version 1:
//
//	offset size field
//	0      1    version, 1
//	1      1    length p of the provider's name, 1..16
//	2      p    provider name: lowercase ASCII letters and digits
//	2+p    2    length n of the provider's part, little-endian, at most 1024
//	4+p    n    provider's part (see the provider: tcp.go for "tcp")
//
// and nothing after it.
type Address []byte

const (
	addressVersion    = 1
	maxProviderName   = 16
	maxAddressPayload = 1024
)

// makeAddress wraps a provider's part in the envelope.
func makeAddress(provider string, part []byte) Address {
	a := make([]byte, 0, 4+len(provider)+len(part))
	a = append(a, addressVersion, byte(len(provider)))
	a = append(a, provider...)
	a = binary.LittleEndian.AppendUint16(a, uint16(len(part)))
	return append(a, part...)
}

// parse returns the provider's name and part, or an error wrapping
// ErrInvalid.
func (a Address) parse() (provider string, part []byte, err error) {
	if len(a) < 2 {
		return "", nil, fmt.Errorf("address of %d bytes: too short: %w", len(a), ErrInvalid)
	}
	if a[0] != addressVersion {
		return "", nil, fmt.Errorf("address version %d, want %d: %w", a[0], addressVersion, ErrInvalid)
	}
	p := int(a[1])
	if p == 0 || p > maxProviderName || len(a) < 2+p+2 {
		return "", nil, fmt.Errorf("address with a provider name of %d bytes in %d: %w", p, len(a), ErrInvalid)
	}
	name := a[2 : 2+p]
	for _, c := range name {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return "", nil, fmt.Errorf("address with provider name %q: %w", name, ErrInvalid)
		}
	}
	n := int(binary.LittleEndian.Uint16(a[2+p:]))
	if n > maxAddressPayload || len(a) != 4+p+n {
		return "", nil, fmt.Errorf("address of %d bytes announcing a %d-byte %s part: %w", len(a), n, name, ErrInvalid)
	}
	return string(name), a[4+p:], nil
}

// String describes the address for people: the provider and where it
// listens, as "tcp 10.0.0.7:41234".
func (a Address) String() string {
	name, part, err := a.parse()
	if err != nil {
		return fmt.Sprintf("invalid address %x", []byte(a))
	}
	if p := providers[name]; p != nil {
		return name + " " + p.describe(part)
	}
	return fmt.Sprintf("%s %x", name, part)
}
