package rdma

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// tcpProvider is the software provider: memory is read and written by a
// responder goroutine in the owner's process, at the other end of a TCP
// connection. It works everywhere, and is the reference the verbs provider
// is tested against.
type tcpProvider struct{}

func (tcpProvider) available() error { return nil }

func (tcpProvider) describe(part []byte) string {
	a, err := parseTCPPart(part)
	if err != nil {
		return fmt.Sprintf("invalid %x", part)
	}
	return a.hostport
}

func (tcpProvider) newEndpoint(cfg *config, ev events) (endpoint, error) {
	e := &tcpEndpoint{
		cfg:      cfg,
		ev:       ev,
		log:      cfg.log,
		nonce:    nonZeroRandom(),
		sendSlot: make(chan struct{}, 1),
		stopped:  make(chan struct{}),
	}
	return e, nil
}

func nonZeroRandom() uint64 {
	for {
		if n := rand.Uint64(); n != 0 {
			return n
		}
	}
}

// tcpPart is the tcp provider's part of an Address:
//
//	offset size field
//	0      8    nonce, non-zero: random per transport, checked by its listener
//	8      1    length h of host:port, at most 255
//	9      h    host:port, as net.Dial takes it
type tcpPart struct {
	nonce    uint64
	hostport string
}

func (a tcpPart) encode() []byte {
	b := binary.LittleEndian.AppendUint64(nil, a.nonce)
	b = append(b, byte(len(a.hostport)))
	return append(b, a.hostport...)
}

func parseTCPPart(b []byte) (tcpPart, error) {
	if len(b) < 9 || int(b[8]) != len(b)-9 {
		return tcpPart{}, fmt.Errorf("tcp address part of %d bytes: %w", len(b), ErrInvalid)
	}
	a := tcpPart{nonce: binary.LittleEndian.Uint64(b), hostport: string(b[9:])}
	host, port, err := net.SplitHostPort(a.hostport)
	if err != nil {
		return tcpPart{}, fmt.Errorf("tcp address %q: %w: %w", a.hostport, err, ErrInvalid)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || host == "" || a.nonce == 0 {
		return tcpPart{}, fmt.Errorf("tcp address %q with nonce %#x: want host, port 1..65535 and a nonce: %w",
			a.hostport, a.nonce, ErrInvalid)
	}
	return a, nil
}

// tcpEndpoint is a Transport over TCP. It uses two connections, one per
// direction of operations: the one it dials (connect) carries its requests
// to the peer and the peer's replies back; the one its listener accepts
// (bind) carries the peer's requests, which a responder applies, and the
// replies. So a responder never waits behind its own transport's
// requests, and applies and answers each request in order without sharing
// its socket.
//
// Requests are written and their replies read by the calling goroutines,
// with no goroutine in between: see requester.go.
type tcpEndpoint struct {
	cfg   *config
	ev    events
	log   *slog.Logger
	nonce uint64 // of this endpoint's Address

	mu          sync.Mutex
	down        bool         // shut down: no new connection
	bound       bool         // bind succeeded
	ln          net.Listener // once bound
	handshaking net.Conn     // the connection whose hello the listener reads
	dialing     net.Conn     // the connection whose answer connect reads
	in          net.Conn     // the peer's requests, served by a responder
	out         *net.TCPConn // this endpoint's requests
	dialed      uint64       // the nonce of the peer connected (or connecting) to
	accepted    uint64       // the nonce of the peer that connected, if it said
	wg          sync.WaitGroup
	stopped     chan struct{} // closed by shutdown

	sendSlot chan struct{} // held while a request is written
	nextID   uint64        // under sendSlot: the last request's id
	iov      [2][]byte     // under sendSlot
	outv     net.Buffers   // under sendSlot; a field, so as not to allocate

	replies  *bufio.Reader // read by the op that leads
	replyHdr [repHeaderLen]byte

	pmu     sync.Mutex
	pending opRing // requests sent and not answered, oldest first
	leading bool   // an op is reading replies, or is being handed the lead
	ended   error  // set when replies stop: nothing is queued after
}

func (e *tcpEndpoint) bind() ([]byte, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(e.cfg.listenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", e.cfg.listenHost, err)
	}
	at := ln.Addr().(*net.TCPAddr)
	host := at.IP.String()
	if at.IP.IsUnspecified() {
		host = e.cfg.advertiseHost
		if host == "" {
			host = firstIPv4()
		}
	}
	hostport := net.JoinHostPort(host, strconv.Itoa(at.Port))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		ln.Close()
		return nil, errClosed
	}
	e.ln, e.bound = ln, true
	e.wg.Add(1)
	go e.accept(ln)
	return tcpPart{nonce: e.nonce, hostport: hostport}.encode(), nil
}

// firstIPv4 returns the first IPv4 address of an up, non-loopback
// interface, else 127.0.0.1.
func firstIPv4() string {
	ifs, _ := net.Interfaces()
	for _, it := range ifs {
		if it.Flags&net.FlagUp == 0 || it.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := it.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// accept serves the listener until the endpoint shuts down. Hellos are
// read one at a time, each within the handshake timeout. The listener
// stays open once a peer is accepted, so that another transport that
// tries learns why it is refused, rather than finding nothing there.
func (e *tcpEndpoint) accept(ln net.Listener) {
	defer e.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			e.mu.Lock()
			down := e.down
			e.mu.Unlock()
			if !down {
				e.log.Warn("rdma: listener failed; no peer can connect", "addr", ln.Addr().String(), "err", err)
			}
			return
		}
		if e.handshake(c) {
			return
		}
	}
}

// handshake reads c's hello and answers it. It returns true once the
// endpoint is down.
func (e *tcpEndpoint) handshake(c net.Conn) (down bool) {
	e.mu.Lock()
	if e.down {
		e.mu.Unlock()
		c.Close()
		return true
	}
	e.handshaking = c
	e.mu.Unlock()

	c.SetDeadline(time.Now().Add(e.cfg.handshakeTimeout))
	var hb [helloLen]byte
	_, err := io.ReadFull(c, hb[:])
	var h hello
	if err == nil {
		h, err = parseHello(&hb)
	}
	e.mu.Lock()
	e.handshaking = nil
	if e.down || err != nil {
		down := e.down
		e.mu.Unlock()
		c.Close() // not a peer of ours: no answer
		if !down {
			e.log.Debug("rdma: refused a connection", "from", c.RemoteAddr().String(), "err", err)
		}
		return down
	}
	verdict := answerAccepted
	switch {
	case h.version != wireVersion:
		verdict = answerVersion
	case h.to != e.nonce:
		verdict = answerStale
	case e.in != nil:
		verdict = answerBusy
	case e.dialed != 0 && h.from != 0 && h.from != e.dialed:
		verdict = answerWrongPeer
	}
	if verdict == answerAccepted {
		e.in, e.accepted = c, h.from
	}
	e.mu.Unlock()

	var ab [answerLen]byte
	putAnswer(&ab, verdict)
	_, err = c.Write(ab[:])
	if verdict != answerAccepted || err != nil {
		c.Close()
		e.log.Debug("rdma: refused a connection", "from", c.RemoteAddr().String(), "answer", verdict.String(), "err", err)
		if verdict == answerAccepted {
			e.mu.Lock()
			e.in, e.accepted = nil, 0
			e.mu.Unlock()
		}
		return false
	}
	c.SetDeadline(time.Time{})
	tune(c)
	e.log.Info("rdma: accepted a peer", "from", c.RemoteAddr().String())
	e.wg.Add(1)
	go e.serve(c)
	return false
}

// tune sets what every connection needs: requests and replies are whole
// messages, so they go out at once.
func tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}

// serve runs the responder for the peer's connection c.
func (e *tcpEndpoint) serve(c net.Conn) {
	defer e.wg.Done()
	err := newResponder(c, c, e.ev.notified).serve()
	e.ev.fail(fmt.Errorf("serving peer %s: %w", c.RemoteAddr(), err))
}

func (e *tcpEndpoint) connect(ctx context.Context, part []byte) (string, error) {
	a, err := parseTCPPart(part)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	switch {
	case e.down:
		err = errClosed
	case e.accepted != 0 && e.accepted != a.nonce:
		err = fmt.Errorf("a peer connected to this transport from another address than %s: %w", a.hostport, ErrInvalid)
	}
	if err != nil {
		e.mu.Unlock()
		return "", err
	}
	e.dialed = a.nonce // now, so that a peer that is not this one is refused
	from := uint64(0)
	if e.bound {
		from = e.nonce
	}
	e.mu.Unlock()

	c, err := e.dial(ctx, a, from)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil && e.down {
		c.Close()
		err = errClosed
	}
	if err != nil {
		e.dialed = 0
		return "", err
	}
	e.out = c
	e.replies = bufio.NewReaderSize(c, bufferSize)
	return a.hostport, nil
}

// dial connects to a and has its listener accept this endpoint as its
// peer, within ctx.
func (e *tcpEndpoint) dial(ctx context.Context, a tcpPart, from uint64) (*net.TCPConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", a.hostport)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("nothing listens at %s: its transport was closed, or has not bound yet: %w", a.hostport, err)
		}
		return nil, fmt.Errorf("dial %s: %w", a.hostport, err)
	}
	c := nc.(*net.TCPConn)
	e.mu.Lock()
	if e.down {
		e.mu.Unlock()
		c.Close()
		return nil, errClosed
	}
	e.dialing = c
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.dialing = nil
		e.mu.Unlock()
	}()

	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	var hb [helloLen]byte
	putHello(&hb, hello{version: wireVersion, to: a.nonce, from: from})
	var ab [answerLen]byte
	_, err = c.Write(hb[:])
	if err == nil {
		_, err = io.ReadFull(c, ab[:])
	}
	if !stop() {
		err = fmt.Errorf("handshake with %s: %w", a.hostport, context.Cause(ctx))
		if ctx.Err() != context.Cause(ctx) {
			err = fmt.Errorf("%w: %w", err, ctx.Err())
		}
	} else if err != nil {
		err = fmt.Errorf("handshake with %s: %w", a.hostport, unexpected(err))
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	version, verdict, err := parseAnswer(&ab)
	switch {
	case err != nil:
		err = fmt.Errorf("handshake with %s: %w", a.hostport, err)
	case verdict == answerVersion:
		err = fmt.Errorf("%s speaks protocol version %d, this transport %d: %w", a.hostport, version, wireVersion, ErrUnsupported)
	case verdict != answerAccepted:
		err = fmt.Errorf("%s %v: %w", a.hostport, verdict, ErrInvalid)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	tune(c)
	return c, nil
}

// aLongTimeAgo is a deadline that has passed: setting it interrupts a
// blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (e *tcpEndpoint) shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return
	}
	e.down = true
	close(e.stopped)
	for _, c := range []io.Closer{e.ln, e.handshaking, e.dialing, e.in, e.out} {
		if c != nil && c != (*net.TCPConn)(nil) {
			c.Close()
		}
	}
}

func (e *tcpEndpoint) wait() { e.wg.Wait() }
