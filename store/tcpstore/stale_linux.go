//go:build linux

package tcpstore

import "syscall"

// stale reports whether an idle connection was closed by the server or has
// bytes waiting, which an idle connection never should; either way it is
// unfit for a request. Peeking without blocking keeps a SET, which has no
// reply, from vanishing into a connection already gone.
func (cc *clientConn) stale() bool {
	if cc.dec.r.Buffered() > 0 {
		return true
	}
	sc, ok := cc.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	stale := true
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		stale = err != syscall.EAGAIN // data, an end of stream, or an error
		return true
	})
	return err != nil || stale
}
