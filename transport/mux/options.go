package mux

// Option configures a Mux.
type Option func(*config)

// config is a Mux's settings.
type config struct {
	// maxHeld bounds what is held for comms not yet opened, all of them
	// together, in bytes: each held frame counts its payload length plus
	// heldOverhead, so that empty frames are bounded too. Default 64 MiB,
	// a guard against a peer out of step, not a measured need: a peer that
	// starts a collective on a comm this end has not opened yet sends its
	// first frames, which can be as large as a tensor's chunk, so the
	// layer above either opens a comm before any member can send on it or
	// raises this. >= 0, where 0 holds nothing.
	maxHeld int
}

// heldOverhead is what a held frame costs beside its payload: a Frame value
// is 72 bytes on 64-bit platforms, and a queue grown by doubling may have
// room for two per frame.
const heldOverhead = 144

func defaultConfig() config {
	return config{maxHeld: 64 << 20}
}

// WithMaxHeld bounds the bytes held for comms that the peer sends to
// before they are opened here, all such comms together. A frame that would
// exceed it fails the whole Mux with ErrHeldLimit. n <= 0 holds nothing:
// every frame must find its comm open.
func WithMaxHeld(n int) Option {
	return func(c *config) { c.maxHeld = max(n, 0) }
}
