//go:build linux

package nvl

import "golang.org/x/sys/unix"

// crossReader reads another process's memory (cross-memory attach,
// process_vm_readv), keeping its vectors so that a read allocates
// nothing.
type crossReader struct {
	local  [1]unix.Iovec
	remote [1]unix.RemoteIovec
}

// read copies len(p) bytes at address in process pid into p: one copy,
// made by this side.
func (r *crossReader) read(pid int, p []byte, address uint64) error {
	defer func() { r.local[0].Base = nil }() // keep nothing alive
	for done := 0; done < len(p); {
		r.local[0].Base = &p[done]
		r.local[0].SetLen(len(p) - done)
		r.remote[0] = unix.RemoteIovec{Base: uintptr(address) + uintptr(done), Len: len(p) - done}
		n, err := unix.ProcessVMReadv(pid, r.local[:], r.remote[:], 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			return unix.EFAULT
		}
		done += n
	}
	return nil
}
