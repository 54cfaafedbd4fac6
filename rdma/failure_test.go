package rdma

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// fakePeer listens like a transport that was bound, accepts one hello,
// answers it, and hands the connection to serve. It returns the Address
// to connect to.
func fakePeer(t *testing.T, verdict answer, serve func(c net.Conn)) Address {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nonce := nonZeroRandom()
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var hb [helloLen]byte
		if _, err := io.ReadFull(c, hb[:]); err != nil {
			return
		}
		var ab [answerLen]byte
		tcpProtocol.putAnswer(&ab, tcpProtocol.version, verdict)
		c.Write(ab[:])
		if serve != nil {
			// Closing the listener at the end of the test ends serve too.
			go func() { <-done; c.Close() }()
			serve(c)
		}
	}()
	return makeAddress("tcp", tcpPart{nonce: nonce, hostport: ln.Addr().String()}.encode())
}

// stall reads requests and never replies.
func stall(c net.Conn) { io.Copy(io.Discard, c) }

// connectFake returns a transport connected to a fake peer.
func connectFake(t *testing.T, serve func(net.Conn)) *Transport {
	t.Helper()
	tr := newBound(t)
	if err := tr.Connect(testContext(t), fakePeer(t, answerAccepted, serve)); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestAbandonedReadBreaks lets a read's deadline pass while its request
// is unanswered: the transport breaks, the read says both why and that,
// and later calls fail at once with the first cause.
func TestAbandonedReadBreaks(t *testing.T) {
	tr := connectFake(t, stall)
	dst := register(t, make([]byte, 8))
	remote := RemoteBuffer{Addr: 4096, Len: 8, Key: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := tr.Read(ctx, mutableView(t, dst, 0, 8), remote)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrBroken) {
		t.Fatalf("abandoned read: %v, want DeadlineExceeded and ErrBroken", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Peer == "" {
		t.Fatalf("abandoned read: %#v, want an *OpError naming the read and the peer", err)
	}
	if tr.Connected() {
		t.Error("Connected after the transport broke")
	}
	for _, err := range []error{
		tr.Write(testContext(t), View(mutableView(t, dst, 0, 8)), remote, false),
		tr.Read(testContext(t), mutableView(t, dst, 0, 8), remote),
		tr.WaitForWrite(testContext(t)),
		func() error { _, err := tr.FetchAdd(testContext(t), remote, 1); return err }(),
	} {
		if !errors.Is(err, ErrBroken) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call after the break: %v, want ErrBroken and no deadline of its own", err)
		}
		if !strings.Contains(err.Error(), "abandoned") {
			t.Errorf("call after the break: %q does not keep the first cause", err)
		}
	}
}

// TestContextBeforeSending ends a call's context while it waits behind
// another call's write: nothing was sent, so the transport stays usable.
func TestContextBeforeSending(t *testing.T) {
	// A peer that reads nothing: a large write fills the socket and holds
	// the send slot.
	hold := make(chan struct{})
	tr := connectFake(t, func(net.Conn) { <-hold })
	defer close(hold)
	big := register(t, make([]byte, 64<<20))
	bigErr := make(chan error, 1)
	go func() {
		bigErr <- tr.Write(context.Background(), view(t, big, 0, big.Len()), RemoteBuffer{Addr: 8, Len: uint64(big.Len()), Key: 1}, false)
	}()
	small := register(t, make([]byte, 8))
	// Wait until the big write holds the slot, then time out behind it.
	for len(tr.ep.(*tcpEndpoint).sendSlot) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := tr.Write(ctx, view(t, small, 0, 8), RemoteBuffer{Addr: 8, Len: 8, Key: 1}, false)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBroken) {
		t.Fatalf("write that timed out before it was sent: %v, want DeadlineExceeded only", err)
	}
	if !tr.Connected() {
		t.Fatal("a call that never went out broke the transport")
	}
	tr.Close()
	if err := <-bigErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("write pending at Close: %v, want ErrClosed", err)
	}
}

// TestClosePending closes transports with calls pending: each fails with
// ErrClosed, and Close returns.
func TestClosePending(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		tr := connectFake(t, stall)
		dst := register(t, make([]byte, 8))
		errc := make(chan error, 1)
		go func() {
			errc <- tr.Read(context.Background(), mutableView(t, dst, 0, 8), RemoteBuffer{Addr: 8, Len: 8, Key: 1})
		}()
		waitQueued(t, tr)
		tr.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("read pending at Close: %v, want ErrClosed", err)
		}
	})
	t.Run("wait-for-write", func(t *testing.T) {
		a, _ := newPair(t)
		errc := make(chan error, 1)
		go func() { errc <- a.WaitForWrite(context.Background()) }()
		for {
			a.mu.Lock()
			n := len(a.waiters)
			a.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("WaitForWrite pending at Close: %v, want ErrClosed", err)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if _, err := a.Bind(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Bind after Close: %v, want ErrClosed", err)
		}
	})
}

// waitQueued waits until tr has a request awaiting its reply.
func waitQueued(t *testing.T, tr *Transport) {
	e := tr.ep.(*tcpEndpoint)
	for {
		e.pmu.Lock()
		n := e.pending.size
		e.pmu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaitForWriteTimeout waits with a deadline and no writer: the wait
// fails with the deadline and the transport is as good as before.
func TestWaitForWriteTimeout(t *testing.T) {
	a, b := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := b.WaitForWrite(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBroken) {
		t.Fatalf("WaitForWrite with no writer: %v, want DeadlineExceeded only", err)
	}
	src := register(t, []byte("x"))
	dst := register(t, []byte("y"))
	if err := a.Write(testContext(t), view(t, src, 0, 1), dst.Remote(), true); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitForWrite(testContext(t)); err != nil {
		t.Fatalf("WaitForWrite after a timed-out one: %v", err)
	}
}

// TestPeerCloses closes one end: the other breaks, pending waits included.
func TestPeerCloses(t *testing.T) {
	a, b := newPair(t)
	errc := make(chan error, 1)
	go func() { errc <- a.WaitForWrite(testContext(t)) }()
	b.Close()
	if err := <-errc; !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "closed by the peer") {
		t.Fatalf("WaitForWrite when the peer closed: %v, want ErrBroken saying the peer closed", err)
	}
	m := register(t, make([]byte, 8))
	if err := a.Write(testContext(t), view(t, m, 0, 8), m.Remote(), false); !errors.Is(err, ErrBroken) {
		t.Fatalf("Write after the peer closed: %v, want ErrBroken", err)
	}
}

// TestProtocolViolations has fake peers answer wrongly: each breaks the
// transport with an error that says what was wrong.
func TestProtocolViolations(t *testing.T) {
	replyWith := func(mutate func(*[repHeaderLen]byte)) func(net.Conn) {
		return func(c net.Conn) {
			var q [reqHeaderLen]byte
			if _, err := io.ReadFull(c, q[:]); err != nil {
				return
			}
			req, _ := parseRequest(&q, 1)
			var r [repHeaderLen]byte
			putReply(&r, reply{id: req.id})
			mutate(&r)
			c.Write(r[:])
			stall(c)
		}
	}
	for _, c := range []struct {
		name   string
		serve  func(net.Conn)
		saying string
	}{
		{"unknown status", replyWith(func(r *[repHeaderLen]byte) { r[0] = 9 }), "status 9"},
		{"wrong id", replyWith(func(r *[repHeaderLen]byte) { r[8] = 7 }), "id 7"},
		{"value on a write", replyWith(func(r *[repHeaderLen]byte) { r[16] = 1 }), "value 0x1"},
		{"reserved bytes", replyWith(func(r *[repHeaderLen]byte) { r[3] = 1 }), "reserved"},
		// It reads the request, header and 8 bytes of data, first:
		// closing with them unread would reset the connection rather than
		// end it.
		{"cut short", func(c net.Conn) {
			var q [reqHeaderLen + 8]byte
			if _, err := io.ReadFull(c, q[:]); err == nil {
				c.Write([]byte{0, 0, 0})
			}
		}, "unexpected EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := connectFake(t, c.serve)
			m := register(t, make([]byte, 8))
			err := tr.Write(testContext(t), view(t, m, 0, 8), RemoteBuffer{Addr: 8, Len: 8, Key: 1}, false)
			if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), c.saying) {
				t.Fatalf("got %v, want ErrBroken saying %q", err, c.saying)
			}
		})
	}
	t.Run("garbage to a responder", func(t *testing.T) {
		a := newBound(t)
		addr, _ := a.Bind()
		_, part, _ := addr.parse()
		ta, _ := parseTCPPart(part)
		c, err := net.Dial("tcp", ta.hostport)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var hb [helloLen]byte
		tcpProtocol.putHello(&hb, hello{version: tcpProtocol.version, to: ta.nonce})
		c.Write(hb[:])
		var ab [answerLen]byte
		io.ReadFull(c, ab[:])
		q := [reqHeaderLen]byte{0: 77, 8: 1}
		c.Write(q[:])
		err = a.WaitForWrite(testContext(t))
		if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "unknown op 77") {
			t.Fatalf("after a bad request, WaitForWrite: %v, want ErrBroken naming the op", err)
		}
	})
}

// TestConnectErrors checks the ways Connect fails, each leaving the
// transport as it was.
func TestConnectErrors(t *testing.T) {
	ctx := testContext(t)
	t.Run("closed transport's address", func(t *testing.T) {
		gone := newBound(t)
		addr, _ := gone.Bind()
		gone.Close()
		a := newBound(t)
		if err := a.Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "nothing listens") {
			t.Fatalf("Connect to a closed transport: %v", err)
		}
		b := newBound(t)
		connect(t, a, b) // a is as good as new
	})
	t.Run("stale nonce", func(t *testing.T) {
		b := newBound(t)
		addr, _ := b.Bind()
		_, part, _ := addr.parse()
		p, _ := parseTCPPart(part)
		p.nonce++
		a := newBound(t)
		if err := a.Connect(ctx, makeAddress("tcp", p.encode())); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("Connect with another nonce: %v, want ErrInvalid saying stale", err)
		}
		connect(t, a, b)
	})
	t.Run("taken", func(t *testing.T) {
		_, b := newPair(t)
		c := newBound(t)
		addr, _ := b.Bind()
		if err := c.Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "another peer is connected") {
			t.Fatalf("a third transport connecting: %v", err)
		}
	})
	t.Run("wrong peer", func(t *testing.T) {
		a, b, c := newBound(t), newBound(t), newBound(t)
		connect(t, b, a) // b's peer is a
		addr, _ := b.Bind()
		if err := c.Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "another peer") {
			t.Fatalf("c connecting to b, whose peer is a: %v", err)
		}
		connect(t, a, b)
		d := newBound(t)
		addr, _ = d.Bind()
		if err := b.Connect(ctx, addr); !errors.Is(err, ErrInvalid) {
			t.Fatalf("b connecting a second time: %v", err)
		}
		// The other way round: f accepted e, and then connects to d.
		e, f := newBound(t), newBound(t)
		connect(t, e, f)
		if err := f.Connect(ctx, addr); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "another address") {
			t.Fatalf("f, accepted from e, connecting to d: %v", err)
		}
	})
	t.Run("bad addresses", func(t *testing.T) {
		a := newBound(t)
		if err := a.Connect(ctx, Address("nonsense")); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Connect to nonsense: %v", err)
		}
		if err := a.Connect(ctx, makeAddress("verbs", []byte{1, 2, 3})); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Connect to another provider's address: %v", err)
		}
		m := register(t, make([]byte, 8))
		if err := a.Write(ctx, view(t, m, 0, 8), m.Remote(), false); !errors.Is(err, ErrNotConnected) {
			t.Fatalf("Write before Connect: %v", err)
		}
	})
	t.Run("deadline in the handshake", func(t *testing.T) {
		checkHandshakeDeadline(t, ctx, newBound(t), "tcp")
	})
	t.Run("strangers are refused", func(t *testing.T) {
		b := newBound(t)
		addr, _ := b.Bind()
		_, part, _ := addr.parse()
		p, _ := parseTCPPart(part)
		c, err := net.Dial("tcp", p.hostport)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))
		io.ReadAll(c) // until the listener hangs up: at once, with a reset
		c.Close()
		a := newBound(t)
		connect(t, a, b)
	})
}
