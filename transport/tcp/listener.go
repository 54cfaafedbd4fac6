package tcp

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// listener accepts TCP connections through a transport.Backlog, which
// exchanges the preface with each in a goroutine of its own; connections
// that pass wait in the backlog for Accept.
type listener struct {
	backlog *transport.Backlog[pending]
	addr    string
	cfg     *config
}

type pending struct {
	sock  *net.TCPConn
	hello []byte
}

var _ transport.Listener = (*listener)(nil)

func newListener(ln *net.TCPListener, addr string, cfg *config) *listener {
	l := &listener{addr: addr, cfg: cfg}
	l.backlog = transport.NewBacklog(ln, "transport/tcp: accept on "+addr, l.handshake, func(p pending) { p.sock.Close() })
	return l
}

func (l *listener) Addr() string { return l.addr }

func (l *listener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	p, err := l.backlog.Accept(ctx)
	if err != nil {
		return nil, nil, err
	}
	return newConn(p.sock, l.cfg), p.hello, nil
}

// Close stops accepting and hangs up on connections that were not
// accepted yet. It returns once the listener's goroutines have ended.
func (l *listener) Close() error { return l.backlog.Close() }

// handshake reads a dialer's preface and answers it. A connection that
// fails the preface is dropped: whatever dialled it is not a gocomms
// dialer, or not one of our version, and only the second kind gets an
// answer.
func (l *listener) handshake(c net.Conn) (pending, error) {
	sock := c.(*net.TCPConn)
	if err := l.cfg.tune(sock); err != nil {
		return pending{}, err
	}
	sock.SetDeadline(time.Now().Add(l.cfg.handshakeTimeout))
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
	return pending{sock, hello}, sock.SetDeadline(time.Time{})
}
