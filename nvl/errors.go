package nvl

import "errors"

var (
	// ErrProtocol reports a record or handshake from the peer that breaks
	// the format: the connection ends without delivering it.
	ErrProtocol = errors.New("nvl: protocol violation")
	// ErrTooLarge reports a payload over the configured maximum, sent or
	// announced.
	ErrTooLarge = errors.New("nvl: payload too large")
	// ErrOtherHost reports an address on another host, or in another
	// network namespace of this one: shared memory cannot reach it.
	ErrOtherHost = errors.New("nvl: address is not on this host")
)
