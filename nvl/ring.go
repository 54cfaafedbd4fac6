package nvl

import (
	"sync/atomic"
	"unsafe"
)

// ringControl is the shared part of a ring: the producer's and the
// consumer's byte counts and their wake-up requests, each on a cache line
// of its own so that the two processes do not bounce one line between
// them. Counts only grow; a position in the data is count mod size.
type ringControl struct {
	tail atomic.Uint64 // bytes written, stored by the producer after the bytes
	_    [56]byte
	head atomic.Uint64 // bytes consumed, stored by the consumer after reading them
	_    [56]byte
	// asleep is set by a consumer about to block on the doorbell; the
	// producer that takes it back (1 -> 0) after publishing rings it.
	asleep atomic.Uint32
	_      [60]byte
	// starved is set by a producer that has bytes queued and no room; the
	// consumer that takes it back after freeing room rings the doorbell.
	starved atomic.Uint32
	_       [60]byte
}

// ringControlSize is the bytes a ringControl takes in the segment, where
// each has 256 (segment.go checks it at compile time).
const ringControlSize = int(unsafe.Sizeof(ringControl{}))

// ring is one direction of a connection: a single-producer,
// single-consumer byte stream in shared memory. Each side keeps its own
// count locally and reads only the other's from the control block.
//
// Ordering: Go's atomics are sequentially consistent, so a producer that
// copies bytes then stores tail, and a consumer that loads tail then reads
// the bytes, never see torn data; and the store-then-load pairs of
// asleep/tail and starved/head cannot both miss each other, which is what
// makes blocking safe (no lost wake-up).
type ring struct {
	ctl  *ringControl
	data []byte // len a power of two
	mask uint64
}

func newRing(ctl *ringControl, data []byte) ring {
	return ring{ctl: ctl, data: data, mask: uint64(len(data) - 1)}
}

// room is how many bytes a producer whose tail is at tail may write.
func (r *ring) room(tail uint64) int {
	return len(r.data) - int(tail-r.ctl.head.Load())
}

// put copies p into the ring at tail, wrapping at the end; the caller
// has checked the room and publishes the new tail.
func (r *ring) put(tail uint64, p []byte) {
	at := int(tail & r.mask)
	n := copy(r.data[at:], p)
	copy(r.data, p[n:])
}

// ready is how many bytes a consumer whose head is at head may read, or
// -1 if the producer's count is impossible (a corrupt or hostile peer).
func (r *ring) ready(head uint64) int {
	n := r.ctl.tail.Load() - head
	if n > uint64(len(r.data)) {
		return -1
	}
	return int(n)
}

// get copies len(p) bytes at head out of the ring; the caller has checked
// they are ready and publishes the new head.
func (r *ring) get(head uint64, p []byte) {
	at := int(head & r.mask)
	n := copy(p, r.data[at:])
	copy(p[n:], r.data)
}
