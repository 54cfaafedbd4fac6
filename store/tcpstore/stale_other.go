//go:build !linux

package tcpstore

// stale reports whether an idle connection has bytes waiting, which an idle
// connection never should. Elsewhere than Linux it cannot see a connection
// the server closed; the next request on it fails instead, except a SET,
// which has no reply and is lost.
func (cc *clientConn) stale() bool { return cc.dec.r.Buffered() > 0 }
