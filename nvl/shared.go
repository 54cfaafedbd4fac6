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
	fd, err := newMemfd("gocomms-window", n)
	if err != nil {
		return nil, fmt.Errorf("nvl: shared memory: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nvl: map shared memory: %w", err)
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
// least n bytes long and sealed against shrinking, as NewShared seals it:
// a process that gave a short file, or one it could shrink later, cannot
// make this one fault; MapShared refuses it with an error wrapping
// ErrProtocol.
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
	if err := checkPeerFile(fd, int64(n), false); err != nil {
		return nil, nil, fmt.Errorf("nvl: process %d's shared memory: %w", h.PID, err)
	}
	// The owner has touched its pages: fault them all in here now, rather
	// than one at a time while a collective reads them.
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, fmt.Errorf("nvl: map shared memory: %w", err)
	}
	return mem, func() error { return unix.Munmap(mem) }, nil
}
