//go:build linux

package nvl

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A segment is the shared memory of one connection: a page of control
// blocks, then the data of its two rings. The dialer creates it as an
// anonymous memory file (memfd) and passes the descriptor over the
// connection's socket, so it has no name anywhere: nothing can find it,
// and the kernel frees it when the last of the two processes unmaps it,
// whether they exit or crash. No segment outlives its job, and there is
// nothing stale to sweep on the next start.
//
//	offset          size   what
//	0               8      magic "GOCMNVL\x00"
//	8               4      layout version, 1
//	12              4      ring size R, a power of two
//	256             256    control of ring 0 (dialer to acceptor)
//	512             256    control of ring 1 (acceptor to dialer)
//	4096            R      data of ring 0
//	4096+R          R      data of ring 1
const (
	segmentMagic   = "GOCMNVL\x00"
	segmentVersion = 1
	controlPage    = 4096
	control0       = 256
	control1       = 512
)

// A ring's control block must fit between the two offsets.
const _ = uint(control1 - control0 - ringControlSize)

type segment struct {
	mem          []byte // the whole mapping
	ring0, ring1 ring
}

func segmentSize(ringSize int) int { return controlPage + 2*ringSize }

// createSegment makes and maps a segment with rings of ringSize bytes. It
// returns the memory file's descriptor, which the caller passes to the
// peer and closes.
func createSegment(ringSize int) (*segment, int, error) {
	fd, err := unix.MemfdCreate("gocomms-nvl", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(segmentSize(ringSize))); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("size the segment: %w", err)
	}
	s, err := mapSegment(fd, ringSize)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	copy(s.mem, segmentMagic)
	binary.LittleEndian.PutUint32(s.mem[8:], segmentVersion)
	binary.LittleEndian.PutUint32(s.mem[12:], uint32(ringSize))
	return s, fd, nil
}

// openSegment maps the segment a dialer passed, after checking that the
// file and its header describe one: the descriptor came from another
// process, which must not be able to make this one read out of bounds.
func openSegment(fd int) (*segment, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat the segment: %w", err)
	}
	var head [16]byte
	if n, err := unix.Pread(fd, head[:], 0); err != nil || n != len(head) {
		return nil, fmt.Errorf("read the segment's header: %d bytes, %v", n, err)
	}
	if string(head[:8]) != segmentMagic {
		return nil, fmt.Errorf("segment has no nvl header")
	}
	if v := binary.LittleEndian.Uint32(head[8:]); v != segmentVersion {
		return nil, fmt.Errorf("segment layout version %d, want %d", v, segmentVersion)
	}
	ringSize := int(binary.LittleEndian.Uint32(head[12:]))
	if ringSize < MinRing || ringSize > MaxRing || ringSize&(ringSize-1) != 0 {
		return nil, fmt.Errorf("segment ring size %d is not a power of two in [%d, %d]", ringSize, MinRing, MaxRing)
	}
	if st.Size != int64(segmentSize(ringSize)) {
		return nil, fmt.Errorf("segment of %d bytes, want %d for rings of %d", st.Size, segmentSize(ringSize), ringSize)
	}
	return mapSegment(fd, ringSize)
}

func mapSegment(fd, ringSize int) (*segment, error) {
	mem, err := unix.Mmap(fd, 0, segmentSize(ringSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the segment: %w", err)
	}
	ctl := func(off int) *ringControl { return (*ringControl)(unsafe.Pointer(&mem[off])) }
	data := func(i int) []byte {
		at := controlPage + i*ringSize
		return mem[at : at+ringSize : at+ringSize]
	}
	return &segment{
		mem:   mem,
		ring0: newRing(ctl(control0), data(0)),
		ring1: newRing(ctl(control1), data(1)),
	}, nil
}

func (s *segment) unmap() { unix.Munmap(s.mem) }
