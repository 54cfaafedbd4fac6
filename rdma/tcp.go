package rdma

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
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
	e := &tcpEndpoint{ev: ev, sendSlot: make(chan struct{}, 1)}
	e.sideChannel.init(cfg)
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
	sideChannel // its mu guards in and out too
	ev          events

	in  net.Conn     // the peer's requests, served by a responder
	out *net.TCPConn // this endpoint's requests

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

func (e *tcpEndpoint) bind() ([]byte, error) { return listen[hello](&e.sideChannel, e) }

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

// The tcp provider's side of the listener's handshake (acceptor).

func (e *tcpEndpoint) readHello(c net.Conn) (hello, hello, error) {
	var hb [helloLen]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return hello{}, hello{}, err
	}
	h, err := tcpProtocol.parseHello(&hb)
	return h, h, err
}

func (e *tcpEndpoint) speaks() uint16 { return tcpProtocol.version }

func (e *tcpEndpoint) busy() bool { return e.in != nil }

func (e *tcpEndpoint) otherPeer(hello) bool { return false }

func (e *tcpEndpoint) admit(c net.Conn) { e.in = c }

func (e *tcpEndpoint) reply(c net.Conn, _ hello, verdict answer) (answer, error) {
	var ab [answerLen]byte
	tcpProtocol.putAnswer(&ab, tcpProtocol.version, verdict)
	_, err := c.Write(ab[:])
	return verdict, err
}

func (e *tcpEndpoint) start(c net.Conn, _ hello) {
	e.log.Info("rdma: accepted a peer", "from", c.RemoteAddr().String())
	e.wg.Add(1)
	go e.serve(c)
}

// serve runs the responder for the peer's connection c.
func (e *tcpEndpoint) serve(c net.Conn) {
	defer e.wg.Done()
	err := newResponder(c, c, e.ev.notified).serve()
	e.ev.fail(fmt.Errorf("serving peer %s: %w", c.RemoteAddr(), err))
}

func (e *tcpEndpoint) connect(ctx context.Context, part []byte) (string, error) {
	var hb [helloLen]byte
	var ab [answerLen]byte
	return e.sideChannel.connect(ctx, part, hb[:], ab[:],
		func(a tcpPart, from uint64) error {
			tcpProtocol.putHello(&hb, hello{version: tcpProtocol.version, to: a.nonce, from: from})
			return nil
		},
		func(a tcpPart) error {
			version, verdict, err := tcpProtocol.parseAnswer(&ab)
			switch {
			case err != nil:
				return fmt.Errorf("handshake with %s: %w", a.hostport, err)
			case verdict == answerVersion:
				return fmt.Errorf("%s speaks protocol version %d, this transport %d: %w", a.hostport, version, tcpProtocol.version, ErrUnsupported)
			case verdict != answerAccepted:
				return fmt.Errorf("%s %v: %w", a.hostport, verdict, ErrInvalid)
			}
			return nil
		},
		func(c *net.TCPConn) {
			e.out = c
			e.replies = bufio.NewReaderSize(c, bufferSize)
		})
}

// aLongTimeAgo is a deadline that has passed: setting it interrupts a
// blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (e *tcpEndpoint) shutdown() {
	e.stop(func() []io.Closer {
		var mine []io.Closer
		if e.in != nil {
			mine = append(mine, e.in)
		}
		if e.out != nil {
			mine = append(mine, e.out)
		}
		return mine
	})
}

func (e *tcpEndpoint) wait() { e.wg.Wait() }
