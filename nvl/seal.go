//go:build linux

package nvl

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// seals fix a memory file's size for good. A peer that could shrink a
// file this process maps would make its next touch past the new end a
// SIGBUS, which no Go code can recover from; a file that cannot grow
// either keeps its size what the handshake or handle said.
const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// newMemfd makes a memory file of size bytes, sealed.
func newMemfd(name string, size int) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("size the memory file: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("seal the memory file: %w", err)
	}
	return fd, nil
}

// checkPeerFile refuses a memory file another process gave unless it is
// a regular file that can no longer shrink or grow, of size bytes (at
// least size, if !exact), before this process maps it.
func checkPeerFile(fd int, size int64, exact bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat the peer's memory file: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: the peer's memory file is not a regular file", ErrProtocol)
	}
	got, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || got&(unix.F_SEAL_SHRINK|unix.F_SEAL_GROW) != unix.F_SEAL_SHRINK|unix.F_SEAL_GROW {
		return fmt.Errorf("%w: the peer's memory file is not sealed against resizing (seals %#x, %v)", ErrProtocol, got, err)
	}
	if st.Size < size || exact && st.Size != size {
		return fmt.Errorf("%w: the peer's memory file holds %d bytes, want %d", ErrProtocol, st.Size, size)
	}
	return nil
}
