//go:build linux

package nvl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// backlogLen is how many connections may finish the handshake before
// Accept takes them; further ones wait in their handshake goroutines.
const backlogLen = 64

// listener accepts on its socket in its own goroutine and runs the
// handshake of each connection in a goroutine of its own, so that a slow
// or silent dialer holds up nobody. Connections that pass wait, mapped
// but not yet served, in the backlog for Accept.
type listener struct {
	ln   *net.UnixListener
	addr string
	cfg  *config

	backlog chan pending
	done    chan struct{} // closed by Close

	mu          sync.Mutex
	closed      bool
	inHandshake map[*net.UnixConn]struct{}
	wg          sync.WaitGroup // the accept loop and the handshakes
}

// pending is a connection through its handshake, not yet accepted.
type pending struct {
	sock          *net.UnixConn
	seg           *segment
	pid           int
	hello         []byte
	sendByAddress bool
}

func (p pending) drop() {
	p.seg.unmap()
	p.sock.Close()
}

var _ transport.Listener = (*listener)(nil)

func newListener(ln *net.UnixListener, addr string, cfg *config) *listener {
	l := &listener{
		ln:          ln,
		addr:        addr,
		cfg:         cfg,
		backlog:     make(chan pending, backlogLen),
		done:        make(chan struct{}),
		inHandshake: make(map[*net.UnixConn]struct{}),
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
		remote := fmt.Sprintf("nvl:%s/pid%d", Host(), p.pid)
		return newConn(p.sock, p.seg, false, l.addr, remote, p.pid, p.sendByAddress, l.cfg), p.hello, nil
	case <-l.done:
		return nil, nil, l.closedErr()
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("transport/nvl: accept on %s: %w", l.addr, ctx.Err())
	}
}

func (l *listener) closedErr() error {
	return fmt.Errorf("transport/nvl: accept on %s: listener closed: %w", l.addr, transport.ErrClosed)
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
	for sock := range l.inHandshake {
		sock.Close()
	}
	l.mu.Unlock()

	err := l.ln.Close()
	l.wg.Wait()
	for {
		select {
		case p := <-l.backlog:
			p.drop()
		default:
			if err != nil {
				return fmt.Errorf("transport/nvl: close listener %s: %w", l.addr, err)
			}
			return nil
		}
	}
}

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		sock, err := l.ln.AcceptUnix()
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

func (l *listener) track(sock *net.UnixConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.inHandshake[sock] = struct{}{}
	return true
}

func (l *listener) untrack(sock *net.UnixConn) {
	l.mu.Lock()
	delete(l.inHandshake, sock)
	l.mu.Unlock()
}

// handshake runs the acceptor's side of a connection's handshake and
// queues it for Accept. One that fails is dropped: whatever dialled is
// not an nvl dialer, or not one of this version, and only the second kind
// is told so.
func (l *listener) handshake(sock *net.UnixConn) {
	defer l.wg.Done()
	p, err := l.exchange(sock)
	l.untrack(sock)
	if err != nil {
		sock.Close()
		return
	}
	select {
	case l.backlog <- p:
	case <-l.done:
		p.drop()
	}
}

func (l *listener) exchange(sock *net.UnixConn) (pending, error) {
	sock.SetDeadline(time.Now().Add(l.cfg.handshakeTimeout))
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
	return pending{sock: sock, seg: seg, pid: pid, hello: pre.hello, sendByAddress: readsAcceptor}, nil
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
