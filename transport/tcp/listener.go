package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// backlogLen is how many connections may pass the preface before Accept
// takes them; further ones wait, answered, in their preface goroutines.
const backlogLen = 64

// listener accepts TCP connections in its own goroutine and exchanges the
// preface with each in a goroutine of its own, so that a slow or silent
// dialer holds up nobody. Connections that pass wait in the backlog for
// Accept. The acceptor answers before Accept is called: Dial does not wait
// for the application.
type listener struct {
	ln   *net.TCPListener
	addr string
	cfg  *config

	backlog chan pending
	done    chan struct{} // closed by Close

	mu        sync.Mutex
	closed    bool
	inPreface map[*net.TCPConn]struct{} // connections exchanging the preface
	wg        sync.WaitGroup            // the accept loop and the preface goroutines
}

type pending struct {
	sock  *net.TCPConn
	hello []byte
}

var _ transport.Listener = (*listener)(nil)

func newListener(ln *net.TCPListener, addr string, cfg *config) *listener {
	l := &listener{
		ln:        ln,
		addr:      addr,
		cfg:       cfg,
		backlog:   make(chan pending, backlogLen),
		done:      make(chan struct{}),
		inPreface: make(map[*net.TCPConn]struct{}),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *listener) Addr() string { return l.addr }

func (l *listener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	select {
	case <-l.done: // a closed listener refuses even when connections wait
		return nil, nil, l.closedErr()
	default:
	}
	select {
	case p := <-l.backlog:
		return newConn(p.sock, l.cfg), p.hello, nil
	case <-l.done:
		return nil, nil, l.closedErr()
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("transport/tcp: accept on %s: %w", l.addr, ctx.Err())
	}
}

func (l *listener) closedErr() error {
	return fmt.Errorf("transport/tcp: accept on %s: listener closed: %w", l.addr, transport.ErrClosed)
}

// Close stops accepting and hangs up on connections that were not
// accepted yet, so that their dialers learn of it. It returns once the
// listener's goroutines have ended.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	for sock := range l.inPreface {
		sock.Close()
	}
	l.mu.Unlock()

	err := l.ln.Close()
	l.wg.Wait()
	for {
		select {
		case p := <-l.backlog:
			p.sock.Close()
		default:
			if err != nil {
				return fmt.Errorf("transport/tcp: close listener %s: %w", l.addr, err)
			}
			return nil
		}
	}
}

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		sock, err := l.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: wait for it to pass
			// rather than spin or stop listening.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-l.done:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		if !l.track(sock) {
			sock.Close()
			return
		}
		l.wg.Add(1)
		go l.handshake(sock)
	}
}

// track records a connection in its preface, so that Close can cut it
// short; false if the listener is closed.
func (l *listener) track(sock *net.TCPConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.inPreface[sock] = struct{}{}
	return true
}

func (l *listener) untrack(sock *net.TCPConn) {
	l.mu.Lock()
	delete(l.inPreface, sock)
	l.mu.Unlock()
}

// handshake reads a dialer's preface, answers it, and queues the
// connection for Accept. A connection that fails the preface is dropped:
// whatever dialled it is not a gocomms dialer, or not one of our version,
// and only the second kind gets an answer.
func (l *listener) handshake(sock *net.TCPConn) {
	defer l.wg.Done()
	hello, err := l.exchange(sock)
	l.untrack(sock)
	if err != nil {
		sock.Close()
		return
	}
	select {
	case l.backlog <- pending{sock, hello}:
	case <-l.done:
		sock.Close()
	}
}

func (l *listener) exchange(sock *net.TCPConn) ([]byte, error) {
	if err := l.cfg.tune(sock); err != nil {
		return nil, err
	}
	sock.SetDeadline(time.Now().Add(l.cfg.handshakeTimeout))
	hello, err := readPreface(sock)
	var ev errVersion
	if errors.As(err, &ev) {
		sock.Write(appendAnswer(nil, statusUnsupportedVersion))
	}
	if err != nil {
		return nil, err
	}
	if _, err := sock.Write(appendAnswer(make([]byte, 0, answerLen), statusAccepted)); err != nil {
		return nil, err
	}
	return hello, sock.SetDeadline(time.Time{})
}
