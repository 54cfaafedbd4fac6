//go:build linux

package nvl

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// newListener accepts on its abstract Unix socket through a
// transport.Backlog, which runs the handshake of each connection in a
// goroutine of its own; connections that pass wait, mapped but not yet
// served, for Accept.
func newListener(ln *net.UnixListener, addr string, cfg *config) *transport.Backlog[pending] {
	return transport.NewBacklog(ln, addr, "nvl", func(c net.Conn) (pending, error) {
		return exchange(c.(*net.UnixConn), addr, cfg)
	})
}

// pending is a connection through its handshake, not yet accepted.
type pending struct {
	sock          *net.UnixConn
	seg           *segment
	pid           int
	hello         []byte
	sendByAddress bool
	addr          string // the listener's
	cfg           *config
}

func (p pending) Accepted() (transport.Conn, []byte) {
	remote := fmt.Sprintf("nvl:%s/pid%d", Host(), p.pid)
	return newConn(p.sock, p.seg, false, p.addr, remote, p.pid, p.sendByAddress, p.cfg), p.hello
}

func (p pending) Drop() {
	p.seg.unmap()
	p.sock.Close()
}

// exchange runs the acceptor's side of a connection's handshake. One
// that fails is dropped: whatever dialled is not an nvl dialer, or not
// one of this version, and only the second kind is told so.
func exchange(sock *net.UnixConn, addr string, cfg *config) (pending, error) {
	sock.SetDeadline(time.Now().Add(cfg.handshakeTimeout))
	pid, err := peerPID(sock)
	if err != nil {
		return pending{}, err
	}
	b := make([]byte, prefaceLen+transport.MaxHello+1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := sock.ReadMsgUnix(b, oob)
	if err != nil {
		return pending{}, err
	}
	fd, err := segmentFD(oob[:oobn], flags)
	if err != nil {
		return pending{}, err
	}
	defer unix.Close(fd)
	pre, err := parsePreface(b[:n])
	if errors.Is(err, errVersion) {
		sock.Write(appendAnswer(nil, statusUnsupportedVersion, false, newProbe()))
	}
	if err != nil {
		return pending{}, err
	}
	seg, err := openSegment(fd)
	if err != nil {
		return pending{}, err
	}
	p := newProbe()
	readsDialer := readable(pid, pre.probeAddress, pre.probeBytes)
	final := make([]byte, finalLen+1)
	if _, err = sock.Write(appendAnswer(make([]byte, 0, answerLen), statusAccepted, readsDialer, p)); err == nil {
		n, err = sock.Read(final)
	}
	runtime.KeepAlive(p) // the dialer has read the probe, or given up
	var readsAcceptor bool
	if err == nil {
		readsAcceptor, err = parseFinal(final[:n])
	}
	if err == nil {
		err = sock.SetDeadline(time.Time{})
	}
	if err != nil {
		seg.unmap()
		return pending{}, err
	}
	return pending{sock: sock, seg: seg, pid: pid, hello: pre.hello, sendByAddress: readsAcceptor, addr: addr, cfg: cfg}, nil
}

// segmentFD takes the one descriptor a preface carries, closing any
// others: a peer that sends more, or none, breaks the protocol.
func segmentFD(oob []byte, flags int) (int, error) {
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return -1, fmt.Errorf("%w: preface truncated", ErrProtocol)
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("%w: preface carries %d descriptors, want 1", ErrProtocol, len(fds))
	}
	return fds[0], nil
}
