package rdma

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// sideChannel is what both providers' endpoints share of their TCP
// connections: the listener that reads hellos one at a time and answers
// them, and the dialing of the peer's listener. The two differ in their
// hellos and answers, and in what they make of a connection once it is
// accepted: an acceptor says that for the listener, and connect's
// functions for the dialer.
type sideChannel struct {
	cfg   *config
	log   *slog.Logger
	nonce uint64 // of this endpoint's Address

	mu          sync.Mutex
	ln          net.Listener  // once bound
	handshaking net.Conn      // the connection whose hello the listener reads
	dialing     net.Conn      // the connection whose answer connect reads
	dialed      uint64        // the nonce of the peer connected (or connecting) to
	accepted    uint64        // the nonce of the peer that connected, if it said
	stopped     chan struct{} // closed by shutdown, under mu: then no new connection
	wg          sync.WaitGroup
}

func (s *sideChannel) init(cfg *config) {
	s.cfg, s.log, s.nonce = cfg, cfg.log, nonZeroRandom()
	s.stopped = make(chan struct{})
}

func (s *sideChannel) isDown() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// stop shuts the side channel down, unless it is already, and reports
// whether it did. Under mu, it closes stopped, after which no connection
// is added, and has mine name the provider's own connections; then it
// closes those, the listener and the connections being handshaken.
func (s *sideChannel) stop(mine func() []io.Closer) bool {
	s.mu.Lock()
	if s.isDown() {
		s.mu.Unlock()
		return false
	}
	close(s.stopped)
	closers := mine()
	if s.ln != nil {
		closers = append(closers, s.ln)
	}
	for _, c := range []net.Conn{s.handshaking, s.dialing} {
		if c != nil {
			closers = append(closers, c)
		}
	}
	s.mu.Unlock()
	for _, c := range closers {
		c.Close()
	}
	return true
}

// takeSlot takes one of c's slots for an operation: by sending on c where
// its buffer holds the slots taken (held), or by receiving from it where
// its buffer holds those free. It takes one at once if it can, and
// otherwise waits until one is free, ctx ends (ctx's error) or the
// endpoint stops (errClosed).
func (s *sideChannel) takeSlot(ctx context.Context, c chan struct{}, held bool) error {
	var in, out chan struct{} // one is nil, and its cases never happen
	if held {
		select {
		case c <- struct{}{}:
			return nil
		default:
		}
		in = c
	} else {
		select {
		case <-c:
			return nil
		default:
		}
		out = c
	}
	select {
	case in <- struct{}{}:
		return nil
	case <-out:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopped:
		return errClosed
	}
}

// acceptor is what a provider adds to the listener's handshake, for its
// hellos of type H. Methods said to run under mu are called with the side
// channel's mu held.
type acceptor[H any] interface {
	// readHello reads c's hello and decodes it: the fields every hello
	// has, and the provider's own.
	readHello(c net.Conn) (hello, H, error)
	// speaks is the protocol version of the provider's hellos.
	speaks() uint16
	// busy, under mu, says whether a peer is accepted already.
	busy() bool
	// otherPeer, under mu, says whether h's dialer cannot be the peer for
	// the provider's own reasons.
	otherPeer(h H) bool
	// admit, under mu, takes c as the accepted peer's connection, or, when
	// c is nil, gives that up.
	admit(c net.Conn)
	// reply writes the answer to h: verdict, or another where the
	// provider cannot accept after all. It returns the answer written.
	reply(c net.Conn, h H, verdict answer) (answer, error)
	// start serves the accepted peer's connection c.
	start(c net.Conn, h H)
}

// listen binds a listener, which acceptPeers serves, and returns the
// provider's part of the Address: the tcp provider's layout in both.
func listen[H any](s *sideChannel, p acceptor[H]) ([]byte, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.listenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", s.cfg.listenHost, err)
	}
	at := ln.Addr().(*net.TCPAddr)
	host := at.IP.String()
	if at.IP.IsUnspecified() {
		host = s.cfg.advertiseHost
		if host == "" {
			host = firstIPv4()
		}
	}
	hostport := net.JoinHostPort(host, strconv.Itoa(at.Port))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isDown() {
		ln.Close()
		return nil, errClosed
	}
	s.ln = ln
	s.wg.Add(1)
	go acceptPeers(s, ln, p)
	return tcpPart{nonce: s.nonce, hostport: hostport}.encode(), nil
}

// acceptPeers serves the listener until the endpoint shuts down. Hellos
// are read one at a time, each within the handshake timeout. The listener
// stays open once a peer is accepted, so that another transport that
// tries learns why it is refused, rather than finding nothing there.
func acceptPeers[H any](s *sideChannel, ln net.Listener, p acceptor[H]) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !s.isDown() {
				s.log.Warn("rdma: listener failed; no peer can connect", "addr", ln.Addr().String(), "err", err)
			}
			return
		}
		if handshake(s, c, p) {
			return
		}
	}
}

// handshake reads c's hello and answers it. It returns true once the
// endpoint is down.
func handshake[H any](s *sideChannel, c net.Conn, p acceptor[H]) (down bool) {
	s.mu.Lock()
	if s.isDown() {
		s.mu.Unlock()
		c.Close()
		return true
	}
	s.handshaking = c
	s.mu.Unlock()

	c.SetDeadline(time.Now().Add(s.cfg.handshakeTimeout))
	h, ph, err := p.readHello(c)
	s.mu.Lock()
	s.handshaking = nil
	if down := s.isDown(); down || err != nil {
		s.mu.Unlock()
		c.Close() // not a peer of ours: no answer
		if !down {
			s.log.Debug("rdma: refused a connection", "from", c.RemoteAddr().String(), "err", err)
		}
		return down
	}
	verdict := answerAccepted
	switch {
	case h.version != p.speaks():
		verdict = answerVersion
	case h.to != s.nonce:
		verdict = answerStale
	case p.busy():
		verdict = answerBusy
	case s.dialed != 0 && h.from != 0 && h.from != s.dialed, p.otherPeer(ph):
		verdict = answerWrongPeer
	}
	admitted := verdict == answerAccepted
	if admitted {
		p.admit(c)
		s.accepted = h.from
	}
	s.mu.Unlock()

	verdict, err = p.reply(c, ph, verdict)
	if verdict != answerAccepted || err != nil {
		c.Close()
		s.log.Debug("rdma: refused a connection", "from", c.RemoteAddr().String(), "answer", verdict.String(), "err", err)
		if admitted {
			s.mu.Lock()
			p.admit(nil)
			s.accepted = 0
			s.mu.Unlock()
		}
		return false
	}
	c.SetDeadline(time.Time{})
	p.start(c, ph)
	return false
}

// connect dials the listener that part names and has it accept this
// endpoint as its peer, within ctx. greet, under mu, writes the hello to
// a's listener into hb (from is this endpoint's nonce, 0 if it has not
// bound); check reads the listener's answer from ab, and keep, under mu,
// takes the connection once it is the peer's.
func (s *sideChannel) connect(ctx context.Context, part []byte, hb, ab []byte,
	greet func(a tcpPart, from uint64) error,
	check func(a tcpPart) error,
	keep func(c *net.TCPConn),
) (string, error) {
	a, err := parseTCPPart(part)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	switch {
	case s.isDown():
		err = errClosed
	case s.accepted != 0 && s.accepted != a.nonce:
		err = fmt.Errorf("a peer connected to this transport from another address than %s: %w", a.hostport, ErrInvalid)
	}
	if err != nil {
		s.mu.Unlock()
		return "", err
	}
	s.dialed = a.nonce // now, so that a peer that is not this one is refused
	from := uint64(0)
	if s.ln != nil {
		from = s.nonce
	}
	if err = greet(a, from); err != nil {
		err = fmt.Errorf("handshake with %s: %w", a.hostport, err)
	}
	s.mu.Unlock()

	var c *net.TCPConn
	if err == nil {
		c, err = s.dial(ctx, a, hb, ab, check)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.isDown() {
		c.Close()
		err = errClosed
	}
	if err != nil {
		s.dialed = 0
		return "", err
	}
	keep(c)
	return a.hostport, nil
}

// dial connects to a, writes the hello hb, reads the answer into ab and
// has check judge it, within ctx.
func (s *sideChannel) dial(ctx context.Context, a tcpPart, hb, ab []byte, check func(a tcpPart) error) (*net.TCPConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", a.hostport)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("nothing listens at %s: its transport was closed, or has not bound yet: %w", a.hostport, err)
		}
		return nil, fmt.Errorf("dial %s: %w", a.hostport, err)
	}
	c := nc.(*net.TCPConn)
	s.mu.Lock()
	if s.isDown() {
		s.mu.Unlock()
		c.Close()
		return nil, errClosed
	}
	s.dialing = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.dialing = nil
		s.mu.Unlock()
	}()

	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	_, err = c.Write(hb)
	if err == nil {
		_, err = io.ReadFull(c, ab)
	}
	if !stop() {
		err = fmt.Errorf("handshake with %s: %w", a.hostport, context.Cause(ctx))
		if ctx.Err() != context.Cause(ctx) {
			err = fmt.Errorf("%w: %w", err, ctx.Err())
		}
	} else if err != nil {
		err = fmt.Errorf("handshake with %s: %w", a.hostport, unexpected(err))
	}
	if err == nil {
		err = check(a)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
