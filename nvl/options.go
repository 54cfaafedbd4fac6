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
	// MinSlot and MaxSlot bound the slot size WithSlots accepts.
	MinSlot = 4 << 10
	MaxSlot = 64 << 20

	maxSlots = 64 // per direction: their states fill the control page
)

// Option configures a Network.
type Option func(*config)

type config struct {
	ringSize         int
	slots, slotSize  int
	slotFrom         int
	spin             time.Duration
	byAddressMin     int
	piece            int
	handshakeTimeout time.Duration
	closeTimeout     time.Duration
}

func defaultConfig() config {
	return config{
		ringSize:         1 << 20,
		slots:            8,
		slotSize:         512 << 10,
		slotFrom:         16 << 10,
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

// WithSlots sets the slots of each direction in the connections this
// network dials: count slots of size bytes (a power of two), 8 of 512 KiB
// by default, the engine's chunk size; 0 slots sends every payload
// through the ring. A payload from 16 KiB to the slot size is copied into
// a free slot, and the receiver reads it there, in place, until it gives
// it back (transport.Release): one copy instead of two. Without a free
// slot it goes through the ring.
func WithSlots(count, size int) Option {
	return func(c *config) { c.slots, c.slotSize = count, size }
}

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

// layout is the shape of a connection's segment, which its dialer
// chooses.
type layout struct {
	ringSize, slotSize, slots int
}

func (l layout) check() error {
	switch {
	case l.ringSize < MinRing || l.ringSize > MaxRing || l.ringSize&(l.ringSize-1) != 0:
		return fmt.Errorf("ring size %d is not a power of two in [%d, %d]", l.ringSize, MinRing, MaxRing)
	case l.slots < 0 || l.slots > maxSlots:
		return fmt.Errorf("%d slots, want 0 to %d", l.slots, maxSlots)
	case l.slots > 0 && (l.slotSize < MinSlot || l.slotSize > MaxSlot || l.slotSize&(l.slotSize-1) != 0):
		return fmt.Errorf("slot size %d is not a power of two in [%d, %d]", l.slotSize, MinSlot, MaxSlot)
	case l.slots == 0 && l.slotSize != 0:
		return fmt.Errorf("slot size %d without slots", l.slotSize)
	}
	return nil
}

func (c *config) layout() layout {
	if c.slots == 0 {
		return layout{ringSize: c.ringSize}
	}
	return layout{ringSize: c.ringSize, slots: c.slots, slotSize: c.slotSize}
}

func (c *config) validate() error {
	if err := c.layout().check(); err != nil {
		return fmt.Errorf("nvl: %w", err)
	}
	switch {
	case c.spin < 0:
		return fmt.Errorf("nvl: negative spin %v", c.spin)
	case c.byAddressMin < 0:
		return fmt.Errorf("nvl: negative by-address threshold %d", c.byAddressMin)
	}
	return nil
}
