package nvl

import (
	"fmt"
	"time"
)

const (
	// MaxPayload is the largest payload a frame may carry, as over TCP.
	MaxPayload = 1 << 30
	// MinRing and MaxRing bound the ring size WithRingSize accepts, and
	// what an acceptor maps.
	MinRing = 64 << 10
	MaxRing = 256 << 20
)

// Option configures a Network.
type Option func(*config)

type config struct {
	ringSize         int
	spin             time.Duration
	byAddressMin     int
	piece            int
	handshakeTimeout time.Duration
	closeTimeout     time.Duration
}

func defaultConfig() config {
	return config{
		ringSize:         1 << 20,
		spin:             50 * time.Microsecond,
		byAddressMin:     0,
		piece:            256 << 10,
		handshakeTimeout: 10 * time.Second,
		closeTimeout:     10 * time.Second,
	}
}

// WithRingSize sets the bytes of each direction's ring in the connections
// this network dials (the dialer's choice holds for both ends): a power
// of two from MinRing to MaxRing, 1 MiB by default. A larger ring lets a
// sender run further ahead of its receiver.
func WithRingSize(bytes int) Option { return func(c *config) { c.ringSize = bytes } }

// WithSpin sets how long a connection's server keeps polling its ring
// after it last moved anything, before it sleeps until a doorbell rings:
// 50 µs by default. Polling answers in well under a microsecond; a
// doorbell costs a system call on the sender and a wake-up here (tens of
// microseconds on a virtual machine). Zero sleeps at once, so that an
// idle job takes no CPU at all; idle connections sleep whatever it is.
func WithSpin(d time.Duration) Option { return func(c *config) { c.spin = d } }

// WithByAddress sets the payload size from which a frame travels by
// address: the receiver copies the payload straight out of the sender's
// memory (process_vm_readv), one copy instead of two through the ring.
// It applies only where the peer has shown, at the handshake, that it
// may read this process's memory (same user, and ptrace allowed between
// the two). Off (0) by default: on the virtual machines measured, a
// cross-process read ran at 4.5-5 GB/s against 14-21 GB/s for a copy, so
// two copies through the ring, one by each side, finish first
// (docs/PERFORMANCE.md). Worth measuring on bare metal.
func WithByAddress(minBytes int) Option { return func(c *config) { c.byAddressMin = minBytes } }

func (c *config) validate() error {
	switch {
	case c.ringSize < MinRing || c.ringSize > MaxRing || c.ringSize&(c.ringSize-1) != 0:
		return fmt.Errorf("transport/nvl: ring size %d is not a power of two from %d to %d", c.ringSize, MinRing, MaxRing)
	case c.spin < 0:
		return fmt.Errorf("transport/nvl: negative spin %v", c.spin)
	case c.byAddressMin < 0:
		return fmt.Errorf("transport/nvl: negative by-address threshold %d", c.byAddressMin)
	}
	return nil
}
