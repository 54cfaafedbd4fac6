//go:build linux

package nvl

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A segment is the shared memory of one connection: a page of control
// blocks, the data of its two rings, and two slabs of slots, one per
// direction. The dialer creates it as an anonymous memory file (memfd)
// and passes the descriptor over the connection's socket, so it has no
// name anywhere: nothing can find it, and the kernel frees it when the
// last of the two processes unmaps it, whether they exit or crash. No
// segment outlives its job, and there is nothing stale to sweep on the
// next start.
//
//	offset          size   what
//	0               8      magic "GOCMNVL\x00"
//	8               4      layout version, 2
//	12              4      ring size R, a power of two
//	16              4      slot size S, a power of two, or 0
//	20              4      slots per direction N, at most 64
//	256             256    control of ring 0 (dialer to acceptor)
//	512             256    control of ring 1 (acceptor to dialer)
//	1024            4N     states of slab 0's slots (0 free, 1 full)
//	1536            4N     states of slab 1's slots
//	4096            R      data of ring 0
//	4096+R          R      data of ring 1
//	4096+2R         NS     slab 0 (dialer to acceptor)
//	4096+2R+NS      NS     slab 1 (acceptor to dialer)
const (
	segmentMagic   = "GOCMNVL\x00"
	segmentVersion = 2
	controlPage    = 4096
	control0       = 256
	control1       = 512
	states0        = 1024
	states1        = 1536

	// slabGuard is address space reserved, never mapped, after each slab:
	// a payload lent from a slot then has a capacity past the buffer
	// pool's largest class, so that a PutBuffer made by mistake drops it
	// instead of filing shared memory as a pooled buffer.
	slabGuard = 1 << 31
)

// A ring's control block, and a slab's states, must fit between offsets.
const (
	_ = uint(control1 - control0 - ringControlSize)
	_ = uint(states1 - states0 - 4*maxSlots)
	_ = uint(controlPage - states1 - 4*maxSlots)
)

// slab is one direction's slots: the producer fills a free slot and sends
// its index; the consumer lends the slot's bytes to its handler and frees
// the slot when they are given back.
type slab struct {
	states []atomic.Uint32
	mem    []byte // the slots, then the guard (never mapped)
	size   int    // bytes per slot
}

// acquire takes the lowest free slot, or returns -1. Lowest first keeps
// reusing the same few slots while the receiver keeps up: their memory
// stays in cache, and slots never needed are never touched (a first touch
// costs a page fault per 4 KiB, 1.5 ms per 512 KiB slot on the virtual
// machines measured).
func (s *slab) acquire() int {
	for i := range s.states {
		if s.states[i].Load() == 0 && s.states[i].CompareAndSwap(0, 1) {
			return i
		}
	}
	return -1
}

// slot returns the n bytes of slot i, with a capacity that reaches into
// the guard.
func (s *slab) slot(i, n int) []byte { return s.mem[i*s.size : i*s.size+n] }

type segment struct {
	mem          []byte // the control page and the rings
	ring0, ring1 ring
	slab0, slab1 slab
	slabs        []byte // both slabs and their guards, one reservation
}

func (l layout) size() int { return controlPage + 2*l.ringSize + 2*l.slots*l.slotSize }

// header is the start of a segment of layout l: its magic, version and
// layout.
func (l layout) header() (head [24]byte) {
	copy(head[:], segmentMagic)
	binary.LittleEndian.PutUint32(head[8:], segmentVersion)
	binary.LittleEndian.PutUint32(head[12:], uint32(l.ringSize))
	binary.LittleEndian.PutUint32(head[16:], uint32(l.slotSize))
	binary.LittleEndian.PutUint32(head[20:], uint32(l.slots))
	return head
}

// createSegment makes and maps a segment of layout l. It returns the
// memory file's descriptor, which the caller passes to the peer and
// closes.
func createSegment(l layout) (*segment, int, error) {
	fd, err := newMemfd("gocomms-nvl", l.size())
	if err != nil {
		return nil, -1, fmt.Errorf("segment: %w", err)
	}
	head := l.header()
	if _, err := unix.Pwrite(fd, head[:], 0); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("write the segment's header: %w", err)
	}
	s, err := mapSegment(fd, l)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	return s, fd, nil
}

// openSegment maps the segment a dialer passed, after checking that the
// file and its header describe one, and that the file is sealed at that
// size: the descriptor came from another process, which must not be able
// to make this one read out of bounds, or fault by shrinking it later.
func openSegment(fd int) (*segment, error) {
	var head [24]byte
	if n, err := unix.Pread(fd, head[:], 0); err != nil || n != len(head) {
		return nil, fmt.Errorf("read the segment's header: %d bytes, %v", n, err)
	}
	if string(head[:8]) != segmentMagic {
		return nil, fmt.Errorf("%w: segment has no nvl header", ErrProtocol)
	}
	if v := binary.LittleEndian.Uint32(head[8:]); v != segmentVersion {
		return nil, fmt.Errorf("segment layout version %d, want %d", v, segmentVersion)
	}
	l := layout{
		ringSize: int(binary.LittleEndian.Uint32(head[12:])),
		slotSize: int(binary.LittleEndian.Uint32(head[16:])),
		slots:    int(binary.LittleEndian.Uint32(head[20:])),
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	if err := checkPeerFile(fd, int64(l.size()), true); err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	return mapSegment(fd, l)
}

func mapSegment(fd int, l layout) (*segment, error) {
	front := controlPage + 2*l.ringSize
	mem, err := unix.Mmap(fd, 0, front, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the segment: %w", err)
	}
	s := &segment{mem: mem}
	ctl := func(off int) *ringControl { return (*ringControl)(unsafe.Pointer(&mem[off])) }
	data := func(i int) []byte {
		at := controlPage + i*l.ringSize
		return mem[at : at+l.ringSize : at+l.ringSize]
	}
	s.ring0 = newRing(ctl(control0), data(0))
	s.ring1 = newRing(ctl(control1), data(1))
	// A page's first write in each process faults, which on a virtual
	// machine costs 10 to 15 µs: rings left to fault as records reach them
	// made the first 400 all-reduces of 2 KiB between 2 processes take
	// 34 µs each, and the rest 4 µs. So each side maps the rings' pages
	// writable now, as a write to each would, without writing: 0.3 to
	// 0.8 ms for the 2 MiB of the default rings, where writing a word a
	// page took 8 ms. The slabs fault as their slots fill: a payload that
	// needs one is large enough to pay its pages.
	_ = unix.Madvise(mem[controlPage:front], unix.MADV_POPULATE_WRITE) // before Linux 5.14, they fault as they fill
	if l.slots == 0 {
		return s, nil
	}
	// Each slab is followed by its guard: reserve the address space of
	// both, then map the file's slabs over the front of each half.
	half := l.slots*l.slotSize + slabGuard
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(2*half), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("reserve the slabs' address space: %w", err)
	}
	s.slabs = unsafe.Slice((*byte)(base), 2*half)
	states := func(off int) []atomic.Uint32 {
		return unsafe.Slice((*atomic.Uint32)(unsafe.Pointer(&mem[off])), l.slots)
	}
	for i, sl := range []*slab{&s.slab0, &s.slab1} {
		at := unsafe.Pointer(&s.slabs[i*half])
		if _, err := unix.MmapPtr(fd, int64(front+i*l.slots*l.slotSize), at, uintptr(l.slots*l.slotSize),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
			s.unmap()
			return nil, fmt.Errorf("map a slab: %w", err)
		}
		*sl = slab{states: states([]int{states0, states1}[i]), mem: s.slabs[i*half : (i+1)*half], size: l.slotSize}
	}
	return s, nil
}

func (s *segment) unmap() {
	unix.Munmap(s.mem)
	if s.slabs != nil {
		unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(s.slabs)), uintptr(len(s.slabs)))
	}
}
