package tcp

import (
	"errors"
	"net"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// newListener accepts TCP connections through a transport.Backlog, which
// exchanges the preface with each in a goroutine of its own; connections
// that pass wait in the backlog for Accept.
func newListener(ln *net.TCPListener, addr string, cfg *config) *transport.Backlog[pending] {
	return transport.NewBacklog(ln, addr, "transport/tcp", func(c net.Conn) (pending, error) {
		return handshake(c.(*net.TCPConn), cfg)
	})
}

// pending is a connection through its preface, not yet accepted.
type pending struct {
	sock  *net.TCPConn
	hello []byte
	cfg   *config
}

func (p pending) Accepted() (transport.Conn, []byte) { return newConn(p.sock, p.cfg), p.hello }

func (p pending) Drop() { p.sock.Close() }

// handshake reads a dialer's preface and answers it. A connection that
// fails the preface is dropped: whatever dialled it is not a gocomms
// dialer, or not one of our version, and only the second kind gets an
// answer.
func handshake(sock *net.TCPConn, cfg *config) (pending, error) {
	if err := cfg.tune(sock); err != nil {
		return pending{}, err
	}
	sock.SetDeadline(time.Now().Add(cfg.handshakeTimeout))
	hello, err := readPreface(sock)
	var ev errVersion
	if errors.As(err, &ev) {
		sock.Write(appendAnswer(nil, statusUnsupportedVersion))
	}
	if err != nil {
		return pending{}, err
	}
	if _, err := sock.Write(appendAnswer(make([]byte, 0, answerLen), statusAccepted)); err != nil {
		return pending{}, err
	}
	return pending{sock, hello, cfg}, sock.SetDeadline(time.Time{})
}
