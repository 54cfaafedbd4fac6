//go:build linux

package nvl

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Shared is memory that processes of this host can map: an RMA window's,
// into which peers write directly. It lives in a memory file like a
// connection's segment, so it has no name and dies with the last process
// that maps it.
type Shared struct {
	// Mem is the memory, zeroed.
	Mem []byte
	// Handle is what another process of this host gives MapShared.
	Handle SharedHandle
	fd     int
}

// SharedHandle names a process's Shared memory to the others of its host:
// they open the memory file through /proc, which the kernel allows only
// to processes that may inspect the owner (the same user, as SO_PEERCRED
// asks of a connection).
type SharedHandle struct {
	PID int
	FD  int
	// Ino is the file's inode: a descriptor number the owner closed and
	// used again for another file names that one, which MapShared
	// refuses when Ino is set.
	Ino uint64
}

// NewShared makes n bytes of shared memory, n > 0.
func NewShared(n int) (*Shared, error) {
	if n <= 0 {
		return nil, fmt.Errorf("nvl: shared memory of %d bytes", n)
	}
	fd, err := unix.MemfdCreate("gocomms-window", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("nvl: memfd_create: %w", err)
	}
	mem, err := sizeAndMap(fd, n, true)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, fmt.Errorf("nvl: stat shared memory: %w", err)
	}
	return &Shared{Mem: mem, Handle: SharedHandle{PID: os.Getpid(), FD: fd, Ino: st.Ino}, fd: fd}, nil
}

// Close unmaps the memory and closes its file; processes that mapped it
// keep their mappings.
func (s *Shared) Close() error {
	err := unix.Munmap(s.Mem)
	if cerr := unix.Close(s.fd); err == nil {
		err = cerr
	}
	return err
}

// MapShared maps the n bytes of another process's Shared memory, and
// returns them with the function that unmaps them. The file must be at
// least n bytes long: a process that gave a short one cannot make this
// one fault.
func MapShared(h SharedHandle, n int) ([]byte, func() error, error) {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/fd/%d", h.PID, h.FD), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("nvl: open process %d's shared memory: %w", h.PID, err)
	}
	defer unix.Close(fd)
	if h.Ino != 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Ino != h.Ino {
			return nil, nil, fmt.Errorf("nvl: process %d's descriptor %d names another file than its shared memory", h.PID, h.FD)
		}
	}
	mem, err := sizeAndMap(fd, n, false)
	if err != nil {
		return nil, nil, err
	}
	return mem, func() error { return unix.Munmap(mem) }, nil
}

// sizeAndMap maps n bytes of the memory file fd, sizing it first if
// create, else checking its size.
func sizeAndMap(fd, n int, create bool) ([]byte, error) {
	if create {
		if err := unix.Ftruncate(fd, int64(n)); err != nil {
			return nil, fmt.Errorf("nvl: size shared memory: %w", err)
		}
	} else {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("nvl: stat shared memory: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < int64(n) {
			return nil, fmt.Errorf("nvl: shared memory of %d bytes, want %d", st.Size, n)
		}
	}
	flags := unix.MAP_SHARED
	if !create {
		// The owner has touched its pages: fault them all in here now,
		// rather than one at a time while a collective reads them.
		flags |= unix.MAP_POPULATE
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("nvl: map shared memory: %w", err)
	}
	return mem, nil
}
