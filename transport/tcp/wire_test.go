package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// checkEnd checks that a connection ended with an error that wraps
// transport.ErrClosed and want, names the peer at peerAddr, and mentions
// each of words; and that the frames before it are frames 0..n-1.
func checkEnd(t *testing.T, frames []transport.Frame, err error, n int, want error, peerAddr string, words ...string) {
	t.Helper()
	t.Log(err)
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("HandleError got %v, want an error wrapping ErrClosed", err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("HandleError got %v, want an error wrapping %v", err, want)
	}
	for _, w := range append(words, peerAddr) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("HandleError got %q, want it to mention %q", err, w)
		}
	}
	if len(frames) != n {
		t.Fatalf("%d frames before HandleError, want %d", len(frames), n)
	}
	for i, f := range frames {
		if f.Header != testHeader(i) || !bytes.Equal(f.Payload, payloadOf(i)) {
			t.Errorf("frame %d arrived as %+v with %d bytes", i, f.Header, len(f.Payload))
		}
	}
}

func payloadOf(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 100+i) }

// goodFrames encodes frames 0..n-1.
func goodFrames(n int) []byte {
	var b []byte
	for i := range n {
		b = appendFrame(b, testHeader(i), payloadOf(i))
	}
	return b
}

func TestCorruptPayload(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	bad := appendFrame(nil, testHeader(2), payloadOf(2))
	bad[headerLen+10] ^= 0x04 // one bit of the payload, in flight
	if _, err := raw.Write(append(goodFrames(2), bad...)); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 2, ErrChecksum, raw.LocalAddr().String(), "frame 2", "payload CRC32C")
}

func TestCorruptHeader(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	bad := appendFrame(nil, testHeader(1), payloadOf(1))
	bad[33] ^= 0x80 // the length's second byte: believed, it would misframe the stream
	if _, err := raw.Write(append(goodFrames(1), bad...)); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 1, ErrChecksum, raw.LocalAddr().String(), "frame 1", "header CRC32C")
}

func TestReservedBits(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(0), 0, 0)
	hdr[2] = 1
	binary.LittleEndian.PutUint32(hdr[40:], crcOf(hdr[:40]))
	if _, err := raw.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 0, ErrProtocol, raw.LocalAddr().String(), "reserved")
}

// TestOversizedFrame: a length over the limit fails the connection before
// anything is allocated for it.
func TestOversizedFrame(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(1), 0, 0)
	binary.LittleEndian.PutUint32(hdr[32:], 0xFFFF_FFF0) // 4 GiB announced, 1 GiB allowed
	binary.LittleEndian.PutUint32(hdr[40:], crcOf(hdr[:40]))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := raw.Write(append(goodFrames(1), hdr[:]...)); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	runtime.ReadMemStats(&after)
	checkEnd(t, frames, err, 1, ErrTooLarge, raw.LocalAddr().String(), "4294967280 bytes")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the process allocated %d bytes while refusing the frame", grew)
	}
}

func TestSendTooLarge(t *testing.T) {
	nw, l := listen(t, WithMaxPayload(16))
	c, err := nw.Dial(t.Context(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(transport.Frame{Payload: make([]byte, 17)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Send of 17 bytes with a 16-byte limit: %v, want ErrTooLarge", err)
	}
	if err := c.Send(transport.Frame{Payload: make([]byte, 16)}); err != nil {
		t.Errorf("Send at the limit: %v", err)
	}
}

// TestPeerHangsUpMidFrame: a peer that stops inside a frame is reported
// after the frames it completed, and the partial frame is never delivered.
func TestPeerHangsUpMidFrame(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	partial := appendFrame(nil, testHeader(3), payloadOf(3))
	if _, err := raw.Write(append(goodFrames(3), partial[:headerLen+5]...)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 3, io.ErrUnexpectedEOF, raw.LocalAddr().String(), "cut short")
}

func TestPeerCloses(t *testing.T) {
	_, l := listen(t)
	raw, c, r := rawPeer(t, l)
	if _, err := raw.Write(goodFrames(5)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 5, nil, raw.LocalAddr().String(), "closed by the peer")
	if err := c.Send(transport.Frame{}); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after the peer closed: %v, want ErrClosed", err)
	}
}

// TestPeerResets: a connection reset (what a peer's kernel sends when the
// peer dies with unread data) is reported after the frames before it.
func TestPeerResets(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	if _, err := raw.Write(goodFrames(4)); err != nil {
		t.Fatal(err)
	}
	r.waitFrames(t, 4)
	raw.(*net.TCPConn).SetLinger(0) // Close now sends RST, not FIN
	raw.Close()
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 4, nil, raw.LocalAddr().String())
}

// TestDialNotGocomms: a dial to something that is not a gocomms listener
// fails at once, saying so.
func TestDialNotGocomms(t *testing.T) {
	addr := serveRaw(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	})
	_, err := New().Dial(t.Context(), addr, []byte("hello"))
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not a gocomms listener") {
		t.Errorf("Dial to an HTTP server: %v, want ErrProtocol saying it is not a gocomms listener", err)
	}
}

func TestDialOtherVersion(t *testing.T) {
	addr := serveRaw(t, func(c net.Conn) {
		b := appendAnswer(nil, statusUnsupportedVersion)
		binary.LittleEndian.PutUint16(b[8:], version+1)
		c.Write(b)
	})
	_, err := New().Dial(t.Context(), addr, nil)
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("Dial to a listener of another version: %v, want ErrProtocol naming its version", err)
	}
}

// TestDialSilentListener: a listener that never answers holds Dial only
// as long as its context.
func TestDialSilentListener(t *testing.T) {
	addr := serveRaw(t, func(net.Conn) {})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := New().Dial(ctx, addr, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a silent listener: %v, want DeadlineExceeded", err)
	}
	if _, err := New(WithDialTimeout(50*time.Millisecond)).Dial(t.Context(), addr, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a silent listener with a dial timeout: %v, want DeadlineExceeded", err)
	}
}

func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := New().Dial(t.Context(), addr, nil); !errors.Is(err, transport.ErrRefused) {
		t.Errorf("Dial to a closed port: %v, want ErrRefused", err)
	}
}

// TestListenerDropsStrangers: bytes that are not a gocomms preface get the
// connection closed without an answer, and the listener goes on serving.
func TestListenerDropsStrangers(t *testing.T) {
	nw, l := listen(t, WithHandshakeTimeout(100*time.Millisecond))
	for _, send := range []string{"GET / HTTP/1.1\r\n\r\n", "", string(appendPreface(nil, nil)[:10])} {
		raw, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		raw.Write([]byte(send))
		raw.SetReadDeadline(time.Now().Add(waitTimeout))
		if n, err := raw.Read(make([]byte, 64)); err == nil {
			t.Errorf("after %q the listener answered %d bytes, want a hang-up", send, n)
		}
		raw.Close()
	}
	c, err := nw.Dial(t.Context(), l.Addr(), []byte("friend"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, hello, err := l.Accept(t.Context())
	if err != nil || string(hello) != "friend" {
		t.Fatalf("Accept after strangers: hello %q, %v", hello, err)
	}
	a.Close()
}

func TestListenerAnswersOtherVersion(t *testing.T) {
	_, l := listen(t)
	raw, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	p := appendPreface(nil, nil)
	binary.LittleEndian.PutUint16(p[8:], version+1)
	raw.Write(p)
	var ans [answerLen]byte
	if _, err := io.ReadFull(raw, ans[:]); err != nil {
		t.Fatal(err)
	}
	if err := parseAnswer(&ans); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("answer to a version 2 preface reads %v, want a refusal naming version 1", err)
	}
}

// serveRaw accepts connections on loopback and hands each to serve, after
// reading what a dialer sends first; it stops after t.
func serveRaw(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			c.Read(make([]byte, prefaceLen))
			serve(c)
		}
	}()
	return ln.Addr().String()
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestDrained: after Close, Drained is closed once the peer has every frame
// sent before the close.
func TestDrained(t *testing.T) {
	nw, l := listen(t)
	d, err := nw.Dial(t.Context(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := l.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := newRecorder()
	a.Start(r)
	for i := range 100 {
		if err := d.Send(transport.Frame{Header: testHeader(i), Payload: payloadOf(i)}); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	select {
	case <-d.(transport.Drainer).Drained():
	case <-time.After(waitTimeout):
		t.Fatal("Drained not closed after Close")
	}
	r.mu.Lock()
	n := len(r.frames)
	r.mu.Unlock()
	if n != 100 {
		t.Errorf("the peer had %d of 100 frames when Drained closed", n)
	}
}
