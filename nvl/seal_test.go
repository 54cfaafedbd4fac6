//go:build linux

package nvl

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSealedFilesKeepTheirSize: neither a connection's segment nor Shared
// memory can be shrunk or grown once made, so no peer can make a mapping
// of it fault.
func TestSealedFilesKeepTheirSize(t *testing.T) {
	s, err := NewShared(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seg, fd, err := createSegment(layout{ringSize: MinRing, slots: 2, slotSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.unmap()
	defer unix.Close(fd)
	for name, fd := range map[string]int{"shared memory": s.fd, "segment": fd} {
		for _, size := range []int64{4096, 1 << 20} {
			if err := unix.Ftruncate(fd, size); !errors.Is(err, unix.EPERM) {
				t.Errorf("%s resized to %d: %v, want EPERM", name, size, err)
			}
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE); !errors.Is(err, unix.EPERM) {
			t.Errorf("%s sealed further: %v, want EPERM", name, err)
		}
	}
}

// hostileMemfd makes a memory file as a peer might: size bytes, starting
// with head, shrunk to shrunk bytes unless negative, then given seals.
func hostileMemfd(t *testing.T, size int64, head []byte, shrunk int64, seal int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("hostile", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fd, head, 0); err != nil {
		t.Fatal(err)
	}
	if shrunk >= 0 {
		if err := unix.Ftruncate(fd, shrunk); err != nil {
			t.Fatal(err)
		}
	}
	if seal != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seal); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

// TestHostileSharedRefused: a handle to memory that is unsealed, sealed
// only against growing, or sealed after being shrunk below what the
// mapping asks, is refused with ErrProtocol before anything maps it.
func TestHostileSharedRefused(t *testing.T) {
	const n = 1 << 16
	for name, fd := range map[string]int{
		"unsealed":         hostileMemfd(t, n, nil, -1, 0),
		"unsealed, shrunk": hostileMemfd(t, n, nil, 4096, 0),
		"grow sealed only": hostileMemfd(t, n, nil, -1, unix.F_SEAL_GROW),
		"sealed, shrunk":   hostileMemfd(t, n, nil, 4096, seals),
	} {
		mem, _, err := MapShared(SharedHandle{PID: unix.Getpid(), FD: fd}, n)
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: mapped %d bytes, err %v; want ErrProtocol", name, len(mem), err)
		}
	}
	if _, unmap, err := MapShared(SharedHandle{PID: unix.Getpid(), FD: hostileMemfd(t, n, nil, -1, seals)}, n); err != nil {
		t.Errorf("sealed at its size: %v", err)
	} else {
		unmap()
	}
}

// TestHostileSegmentRefused: a segment whose header is right, in a file
// unsealed, or sealed at a size other than its layout's, is refused with
// ErrProtocol.
func TestHostileSegmentRefused(t *testing.T) {
	l := layout{ringSize: MinRing, slots: 2, slotSize: 4096}
	head := l.header()
	size := int64(l.size())
	for name, fd := range map[string]int{
		"unsealed":       hostileMemfd(t, size, head[:], -1, 0),
		"shrink sealed":  hostileMemfd(t, size, head[:], -1, unix.F_SEAL_SHRINK),
		"sealed, shrunk": hostileMemfd(t, size, head[:], size-4096, seals),
		"sealed, grown":  hostileMemfd(t, size, head[:], size+4096, seals),
	} {
		if seg, err := openSegment(fd); !errors.Is(err, ErrProtocol) {
			if seg != nil {
				seg.unmap()
			}
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
	seg, err := openSegment(hostileMemfd(t, size, head[:], -1, seals))
	if err != nil {
		t.Fatalf("sealed at its size: %v", err)
	}
	seg.unmap()
}
