package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms/rdma/verbs"
)

// The tests in this file need verbs transports: they skip without them,
// saying why, and TestVerbsFake runs them against the stand-in library.
// Several look inside the endpoint (verbsEP), to hold its poller back or
// to check its bookkeeping.

// holdPoller stops tr's poller before its next poll, so that operations
// stay in flight after the device has done them, and returns the function
// that lets it go on (called at the latest when the test ends).
func holdPoller(t *testing.T, tr *Transport) (resume func()) {
	t.Helper()
	e := verbsEP(tr)
	h := &pollHold{parked: make(chan struct{}, 1), resume: make(chan struct{})}
	e.hold.Store(h)
	select {
	case e.kick <- struct{}{}:
	default:
	}
	select {
	case <-h.parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the poller did not stop")
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			e.hold.Store(nil)
			close(h.resume)
		})
	}
	t.Cleanup(resume)
	return resume
}

// waitInflight waits until tr has n send requests in flight.
func waitInflight(t *testing.T, tr *Transport, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for verbsEP(tr).inflight.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want %d", verbsEP(tr).inflight.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkIdle checks tr's bookkeeping once nothing is in flight: every
// send slot and flight free, every credit back.
func checkIdle(t *testing.T, tr *Transport) {
	t.Helper()
	e := verbsEP(tr)
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := e.inflight.Load(); n != 0 || len(e.freeSlots) != verbsSendDepth ||
		len(e.freeFlights) != verbsSendDepth || len(e.credits) != verbsSendDepth {
		t.Errorf("idle transport: %d in flight, %d free slots, %d free flights, %d credits; want 0 and %d",
			n, len(e.freeSlots), len(e.freeFlights), len(e.credits), verbsSendDepth)
	}
}

// noNotification checks that tr has no notification left to wait for.
func noNotification(t *testing.T, tr *Transport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := tr.WaitForWrite(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForWrite with no notification left: %v", err)
	}
}

// TestVerbsDataPath moves bytes both ways, checks the flags that keep
// operations in order, and logs the byte order of the device's atomics.
func TestVerbsDataPath(t *testing.T) {
	a, b := verbsPair(t)
	ctx := testContext(t)
	e := verbsEP(a)
	t.Logf("device %s, queue pair %v, chunks of %d bytes, atomics %v", e.dev.name, e.local, e.chunk, e.dev.atomics)

	for _, n := range []int{1, 8, 4096, 100_000} {
		for _, dir := range [][2]*Transport{{a, b}, {b, a}} {
			want := randomBytes(t, n, uint64(n))
			src := register(t, bytes.Clone(want))
			dst := register(t, make([]byte, n))
			back := register(t, make([]byte, n))
			if err := dir[0].Write(ctx, view(t, src, 0, n), dst.Remote(), true); err != nil {
				t.Fatal(err)
			}
			if err := dir[1].WaitForWrite(ctx); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst.buf, want) {
				t.Fatalf("%d bytes: the peer's memory differs after the notified write", n)
			}
			if err := dir[0].Read(ctx, mutableView(t, back, 0, n), dst.Remote()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.buf, want) {
				t.Fatalf("%d bytes: the read returned other bytes", n)
			}
		}
	}

	// Words are in the device's byte order for atomics; the package
	// documents the host's, which a device may not share.
	w := register(t, alignedBytes(8))
	binary.NativeEndian.PutUint64(w.buf, 10)
	old, err := a.FetchAdd(ctx, w.Remote(), 5)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case old == 10 && binary.NativeEndian.Uint64(w.buf) == 15:
		t.Log("atomics: the device reads and returns words in the host's byte order")
	case binary.BigEndian.Uint64(w.buf) == binary.BigEndian.Uint64(binary.NativeEndian.AppendUint64(nil, 10))+5:
		t.Errorf("atomics: the device works on big-endian words; FetchAdd returned %#x", old)
	default:
		t.Errorf("fetch-add of 5 to 10: returned %d, left %x", old, w.buf)
	}

	for k, want := range map[opKind]verbs.SendFlags{
		opWrite: verbs.Signaled | verbs.Fence, opFetchAdd: verbs.Signaled | verbs.Fence,
		opCompareAndSwap: verbs.Signaled | verbs.Fence, opRead: verbs.Signaled,
	} {
		if got := verbsFlags(k); got != want {
			t.Errorf("flags of a %v: %v, want %v", k, got, want)
		}
	}
	noNotification(t, a)
	noNotification(t, b)
	checkIdle(t, a)
	checkIdle(t, b)
}

// TestVerbsChunks moves transfers of many work requests, more than the
// send queue holds, and checks that concurrent operations never land in
// the middle of one.
func TestVerbsChunks(t *testing.T) {
	needVerbs(t)
	verbsChunk = 4096
	t.Cleanup(func() { verbsChunk = 0 })
	a, b := verbsPair(t)
	ctx := testContext(t)
	n := 3*verbsSendDepth*4096 + 123
	want := randomBytes(t, n, 1)
	src := register(t, bytes.Clone(want))
	dst := register(t, make([]byte, n))
	if err := a.Write(ctx, view(t, src, 0, n), dst.Remote(), true); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitForWrite(ctx); err != nil {
		t.Fatal(err)
	}
	noNotification(t, b) // one notification for all the requests of the write
	if !bytes.Equal(dst.buf, want) {
		t.Fatalf("the peer's memory differs in %d bytes after a chunked write", diff(dst.buf, want))
	}
	back := register(t, make([]byte, n))
	if err := a.Read(ctx, mutableView(t, back, 0, n), dst.Remote()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.buf, want) {
		t.Fatalf("a chunked read returned other bytes in %d places", diff(back.buf, want))
	}

	// Whole writes of one byte value, and reads of the whole buffer at the
	// same time: every read sees one value throughout.
	clear(dst.buf)
	fill := [2]*Memory{register(t, bytes.Repeat([]byte{0xaa}, n)), register(t, bytes.Repeat([]byte{0x55}, n))}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for i := range 20 {
			if err := a.Write(ctx, view(t, fill[i%2], 0, n), dst.Remote(), false); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		got := register(t, make([]byte, n))
		for reads := 0; ; reads++ {
			select {
			case <-stop:
				t.Logf("%d whole reads during the writes", reads)
				return
			default:
			}
			if err := a.Read(ctx, mutableView(t, got, 0, n), dst.Remote()); err != nil {
				t.Error(err)
				return
			}
			for i, c := range got.buf {
				if c != got.buf[0] {
					t.Errorf("a read saw byte %#x at 0 and %#x at %d: it landed inside a write", got.buf[0], c, i)
					return
				}
			}
		}
	})
	wg.Wait()
	checkIdle(t, a)
}

// TestVerbsNotifications sends notifying writes faster than the peer's
// poller posts its receives again: each waits for a receive of the
// peer's, none finds it missing, and every one is counted. A write whose
// context ends while it waits was never sent, and breaks nothing.
func TestVerbsNotifications(t *testing.T) {
	a, b := verbsPair(t)
	ctx := testContext(t)
	src := register(t, make([]byte, 8))
	dst := register(t, make([]byte, 8))
	const n = 5 * verbsRecvDepth
	for i := range n {
		if err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), true); err != nil {
			t.Fatalf("notifying write %d: %v", i, err)
		}
	}
	for i := range n {
		if err := b.WaitForWrite(ctx); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	noNotification(t, b)

	// b's poller stops: its receives are not posted again, and a runs out.
	resume := holdPoller(t, b)
	for i := range verbsRecvDepth {
		if err := a.Write(ctx, view(t, src, 0, 0), slice(t, dst.Remote(), 0, 0), true); err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	err := a.Write(short, view(t, src, 0, 8), dst.Remote(), true)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "receives") {
		t.Fatalf("notifying write with none of the peer's receives left: %v, want DeadlineExceeded only", err)
	}
	if err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), false); err != nil {
		t.Fatalf("a write that does not notify, meanwhile: %v", err)
	}
	resume()
	for i := range verbsRecvDepth {
		if err := b.WaitForWrite(ctx); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	noNotification(t, b)
	if err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), true); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitForWrite(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(verbsEP(a).notes) != verbsRecvDepth {
		if time.Now().After(deadline) {
			t.Fatalf("a holds %d credits once everything is counted, want %d", len(verbsEP(a).notes), verbsRecvDepth)
		}
		time.Sleep(time.Millisecond)
	}
	checkIdle(t, a)
}

// TestVerbsConnect checks the ways Connect fails, each leaving the
// transport as it was, as TestConnectErrors does for the tcp provider.
func TestVerbsConnect(t *testing.T) {
	needVerbs(t)
	ctx := testContext(t)
	bound := func() *Transport { return newBound(t, WithProvider("verbs")) }
	unbound := func() *Transport {
		tr, err := New(WithProvider("verbs"), WithListenHost("127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	t.Run("closed transport's address", func(t *testing.T) {
		gone := bound()
		addr, _ := gone.Bind()
		gone.Close()
		a := bound()
		if err := a.Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "nothing listens") {
			t.Fatalf("Connect to a closed transport: %v", err)
		}
		connect(t, a, bound())
	})
	t.Run("stale nonce", func(t *testing.T) {
		b := bound()
		addr, _ := b.Bind()
		_, part, _ := addr.parse()
		p, _ := parseTCPPart(part)
		p.nonce++
		a := bound()
		if err := a.Connect(ctx, makeAddress("verbs", p.encode())); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("Connect with another nonce: %v, want ErrInvalid saying stale", err)
		}
		connect(t, a, b)
	})
	t.Run("taken", func(t *testing.T) {
		_, b := verbsPair(t)
		addr, _ := b.Bind()
		if err := bound().Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "another peer is connected") {
			t.Fatalf("a third transport connecting: %v", err)
		}
	})
	t.Run("wrong peer", func(t *testing.T) {
		a, b, c := bound(), bound(), bound()
		connect(t, b, a)
		addr, _ := b.Bind()
		if err := c.Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "another peer") {
			t.Fatalf("c connecting to b, whose peer is a: %v", err)
		}
		connect(t, a, b)
		d := bound()
		addr, _ = d.Bind()
		if err := b.Connect(ctx, addr); !errors.Is(err, ErrInvalid) {
			t.Fatalf("b connecting a second time: %v", err)
		}
		e, f := bound(), bound()
		connect(t, e, f)
		if err := f.Connect(ctx, addr); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "another address") {
			t.Fatalf("f, accepted from e, connecting to d: %v", err)
		}
	})
	t.Run("queue pair taken by a peer without an address", func(t *testing.T) {
		// x connects to y before binding, so no nonce says who its peer
		// is: its queue pair does.
		x, y := unbound(), bound()
		connect(t, x, y)
		addr, err := x.Bind()
		if err != nil {
			t.Fatal(err)
		}
		if err := unbound().Connect(ctx, addr); err == nil || !strings.Contains(err.Error(), "another peer") {
			t.Fatalf("w connecting to x, whose queue pair serves y: %v", err)
		}
		connect(t, y, x)
	})
	t.Run("bad addresses", func(t *testing.T) {
		a := bound()
		if err := a.Connect(ctx, Address("nonsense")); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Connect to nonsense: %v", err)
		}
		if err := a.Connect(ctx, makeAddress("verbs", []byte{1, 2, 3})); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Connect to a malformed verbs address: %v", err)
		}
		tcp := newBound(t, WithProvider("tcp"))
		addr, _ := tcp.Bind()
		if err := a.Connect(ctx, addr); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Connect to a tcp transport's address: %v", err)
		}
		mine, _ := a.Bind()
		if err := tcp.Connect(ctx, mine); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("a tcp transport connecting to a verbs address: %v", err)
		}
		m := register(t, make([]byte, 8))
		if err := a.Write(ctx, view(t, m, 0, 8), m.Remote(), false); !errors.Is(err, ErrNotConnected) {
			t.Fatalf("Write before Connect: %v", err)
		}
		if s := mine.String(); !strings.HasPrefix(s, "verbs 127.0.0.1:") {
			t.Errorf("address reads %q", s)
		}
	})
	t.Run("deadline in the handshake", func(t *testing.T) {
		checkHandshakeDeadline(t, ctx, bound(), "verbs")
	})
	t.Run("strangers are refused", func(t *testing.T) {
		b := bound()
		addr, _ := b.Bind()
		_, part, _ := addr.parse()
		p, _ := parseTCPPart(part)
		for _, junk := range [][]byte{
			[]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n" + strings.Repeat("x", verbsHelloLen)),
			func() []byte { // a tcp transport's hello
				var h [helloLen]byte
				tcpProtocol.putHello(&h, hello{version: tcpProtocol.version, to: p.nonce})
				return append(h[:], make([]byte, verbsHelloLen)...)
			}(),
		} {
			c, err := net.Dial("tcp", p.hostport)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(junk)
			if got, _ := io.ReadAll(c); len(got) != 0 {
				t.Errorf("a stranger got an answer: %x", got)
			}
			c.Close()
		}
		connect(t, bound(), b)
	})
}

// TestVerbsOneWay has a transport that only binds serve one that only
// connects: its queue pair answers, and it counts notifications.
func TestVerbsOneWay(t *testing.T) {
	needVerbs(t)
	ctx := testContext(t)
	server := newBound(t, WithProvider("verbs"))
	client, err := New(WithProvider("verbs"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	connect(t, client, server)
	src := register(t, []byte("one way"))
	dst := register(t, make([]byte, 7))
	if err := client.Write(ctx, view(t, src, 0, 7), dst.Remote(), true); err != nil {
		t.Fatal(err)
	}
	if err := server.WaitForWrite(ctx); err != nil || string(dst.buf) != "one way" {
		t.Fatalf("served write: %v, memory %q", err, dst.buf)
	}
	if err := server.Write(ctx, view(t, src, 0, 7), dst.Remote(), false); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Write from the transport that only binds: %v, want ErrNotConnected", err)
	}
	client.Close()
	if err := server.WaitForWrite(ctx); !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "closed by the peer") {
		t.Fatalf("WaitForWrite once the client closed: %v", err)
	}
}

// TestVerbsAbandoned lets a read's deadline pass while the device has
// done it but its completion is not yet polled: the transport breaks, as
// the tcp provider's does, and so does the peer's.
func TestVerbsAbandoned(t *testing.T) {
	a, b := verbsPair(t)
	src := register(t, []byte("12345678"))
	dst := register(t, make([]byte, 8))
	if err := a.Read(testContext(t), mutableView(t, dst, 0, 8), src.Remote()); err != nil {
		t.Fatal(err) // the key is resolved: what follows is on the wire at once
	}
	holdPoller(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := a.Read(ctx, mutableView(t, dst, 0, 8), src.Remote())
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrBroken) {
		t.Fatalf("abandoned read: %v, want DeadlineExceeded and ErrBroken", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Peer == "" {
		t.Fatalf("abandoned read: %#v, want an *OpError naming the read and the peer", err)
	}
	for _, err := range []error{
		a.Write(testContext(t), view(t, src, 0, 8), dst.Remote(), false),
		a.WaitForWrite(testContext(t)),
		func() error {
			_, err := a.FetchAdd(testContext(t), RemoteBuffer{Addr: 8, Len: 8, Key: 1}, 1)
			return err
		}(),
	} {
		if !errors.Is(err, ErrBroken) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "abandoned") {
			t.Errorf("call after the break: %v, want ErrBroken with the first cause and no deadline of its own", err)
		}
	}
	if err := b.WaitForWrite(testContext(t)); !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "closed by the peer") {
		t.Fatalf("the peer of a broken transport: %v, want ErrBroken saying the peer closed", err)
	}
}

// TestVerbsContextBeforeSending ends a call's context while it waits for
// room in a full send queue: nothing was posted, so the transport stays
// usable.
func TestVerbsContextBeforeSending(t *testing.T) {
	a, _ := verbsPair(t)
	ctx := testContext(t)
	src := register(t, make([]byte, 8))
	dst := register(t, make([]byte, 8*(verbsSendDepth+2)))
	if err := a.Write(ctx, view(t, src, 0, 8), slice(t, dst.Remote(), 0, 8), false); err != nil {
		t.Fatal(err)
	}
	resume := holdPoller(t, a)
	errs := make(chan error, verbsSendDepth)
	for i := range verbsSendDepth {
		go func() {
			errs <- a.Write(ctx, view(t, src, 0, 8), slice(t, dst.Remote(), uint64(8*i), 8), false)
		}()
	}
	waitInflight(t, a, verbsSendDepth)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	err := a.Write(short, view(t, src, 0, 8), slice(t, dst.Remote(), 8*verbsSendDepth, 8), false)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "room") {
		t.Fatalf("write that timed out waiting for room: %v, want DeadlineExceeded only", err)
	}
	if !a.Connected() {
		t.Fatal("a call that was never posted broke the transport")
	}
	resume()
	for range verbsSendDepth {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Write(ctx, view(t, src, 0, 8), slice(t, dst.Remote(), 8*verbsSendDepth, 8), false); err != nil {
		t.Fatal(err)
	}
	checkIdle(t, a)
}

// TestVerbsClosePending closes a transport with a read in flight and a
// wait pending: both fail with ErrClosed, and Close returns.
func TestVerbsClosePending(t *testing.T) {
	a, _ := verbsPair(t)
	src := register(t, make([]byte, 8))
	dst := register(t, make([]byte, 8))
	if err := a.Read(testContext(t), mutableView(t, dst, 0, 8), src.Remote()); err != nil {
		t.Fatal(err)
	}
	holdPoller(t, a)
	readErr, waitErr := make(chan error, 1), make(chan error, 1)
	go func() { readErr <- a.Read(context.Background(), mutableView(t, dst, 0, 8), src.Remote()) }()
	go func() { waitErr <- a.WaitForWrite(context.Background()) }()
	waitInflight(t, a, 1)
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
	for what, c := range map[string]chan error{"read": readErr, "WaitForWrite": waitErr} {
		if err := <-c; !errors.Is(err, ErrClosed) {
			t.Errorf("%s pending at Close: %v, want ErrClosed", what, err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Bind(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Bind after Close: %v, want ErrClosed", err)
	}
}

// TestVerbsCompletionError has the device fail a write (an rkey the
// peer's device does not know): the transport breaks with the
// completion's error, later calls fail at once, and the peer breaks.
func TestVerbsCompletionError(t *testing.T) {
	a, b := verbsPair(t)
	ctx := testContext(t)
	src := register(t, make([]byte, 8))
	dst := register(t, make([]byte, 8))
	if err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), false); err != nil {
		t.Fatal(err)
	}
	e := verbsEP(a)
	e.rmu.Lock()
	e.rcache[dst.Remote().Key].rkey ^= 0xffffff
	e.rmu.Unlock()
	err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), false)
	var ce *verbs.CompletionError
	if !errors.Is(err, ErrBroken) || !errors.As(err, &ce) || ce.Status != verbs.StatusRemAccessErr {
		t.Fatalf("write with a bad rkey: %v, want ErrBroken with the device's remote access error", err)
	}
	t.Logf("write with a bad rkey: %v", err)
	// A call that waited on the broken queue pair would end with ctx.
	if err2 := a.Read(ctx, mutableView(t, src, 0, 8), dst.Remote()); !errors.Is(err2, ErrBroken) || !errors.As(err2, &ce) {
		t.Fatalf("read after the break: %v, want the first cause", err2)
	}
	if err := b.WaitForWrite(ctx); !errors.Is(err, ErrBroken) {
		t.Fatalf("the peer: %v, want ErrBroken", err)
	}
}

// TestVerbsDeregister checks that Deregister waits for an operation in
// flight on the memory, revokes the rkey from the peer, and takes the
// memory off the device.
func TestVerbsDeregister(t *testing.T) {
	a, b := verbsPair(t)
	ctx := testContext(t)
	src := register(t, []byte("abcdefgh"))
	dst, err := Register(make([]byte, 8))
	if err != nil {
		t.Fatal(err)
	}
	key := dst.Remote().Key
	if err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), false); err != nil {
		t.Fatal(err)
	}
	dev := verbsEP(a).dev
	hasRegion := func(key uint64) bool {
		dev.mu.Lock()
		defer dev.mu.Unlock()
		return dev.regions[key] != nil
	}
	if !hasRegion(key) || !hasRegion(src.key) {
		t.Fatal("the written memory and the write's source are not registered with the device")
	}

	resume := holdPoller(t, a)
	writeErr := make(chan error, 1)
	go func() { writeErr <- a.Write(ctx, view(t, src, 0, 8), dst.Remote(), false) }()
	waitInflight(t, a, 1)
	deregistered := make(chan error, 1)
	go func() { deregistered <- dst.Deregister() }()
	select {
	case err := <-deregistered:
		t.Fatalf("Deregister returned (%v) with a write to the memory in flight", err)
	case <-time.After(30 * time.Millisecond):
	}
	resume()
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-deregistered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Deregister did not return once the write completed")
	}
	if hasRegion(key) {
		t.Error("the memory is still registered with the device after Deregister")
	}
	ea := verbsEP(a)
	ea.rmu.Lock()
	cached := ea.rcache[key] != nil
	ea.rmu.Unlock()
	if cached {
		t.Error("the peer still holds the revoked rkey")
	}
	if err := a.Write(ctx, view(t, src, 0, 8), dst.Remote(), false); !errors.Is(err, ErrUnregistered) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%#x", key)) {
		t.Fatalf("write to the deregistered key: %v, want ErrUnregistered naming it", err)
	}

	// Memory used only locally leaves the device as well.
	if err := src.Deregister(); err != nil {
		t.Fatal(err)
	}
	if hasRegion(src.key) {
		t.Error("the write's source is still registered with the device after Deregister")
	}
	if !a.Connected() || !b.Connected() {
		t.Fatal("deregistering broke a transport")
	}
	checkIdle(t, a)
}

// TestVerbsSharedRegistration serves one Memory to two peers through two
// transports: it is registered with the device once, and its
// deregistration reaches both peers.
func TestVerbsSharedRegistration(t *testing.T) {
	s1, p1 := verbsPair(t)
	s2, p2 := verbsPair(t)
	ctx := testContext(t)
	weights, err := Register(bytes.Repeat([]byte("w"), 4096))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Transport{p1, p2} {
		got := register(t, make([]byte, 4096))
		if err := p.Read(ctx, mutableView(t, got, 0, 4096), weights.Remote()); err != nil || !bytes.Equal(got.buf, weights.buf) {
			t.Fatalf("read of the weights: %v", err)
		}
	}
	dev := verbsEP(s1).dev
	if verbsEP(s2).dev != dev {
		t.Fatal("two transports of one process opened the device twice")
	}
	dev.mu.Lock()
	r := dev.regions[weights.key]
	exporters := 0
	if r != nil {
		exporters = len(r.exporters)
	}
	dev.mu.Unlock()
	if r == nil || exporters != 2 {
		t.Fatalf("the weights' region: %v, told to %d peers; want one region told to 2", r, exporters)
	}
	if err := weights.Deregister(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Transport{p1, p2} {
		got := register(t, make([]byte, 4096))
		if err := p.Read(ctx, mutableView(t, got, 0, 4096), weights.Remote()); !errors.Is(err, ErrUnregistered) {
			t.Fatalf("read of the deregistered weights: %v, want ErrUnregistered", err)
		}
	}
}

// rawPeer is the far end of a verbs side channel, played by the test.
type rawPeer struct {
	t *testing.T
	c net.Conn
}

func (p rawPeer) send(b []byte) {
	p.t.Helper()
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

func (p rawPeer) sendCtl(m ctl) {
	var b [ctlLen]byte
	putCtl(&b, m)
	p.send(b[:])
}

func (p rawPeer) receiveCtl(toDialer bool) ctl {
	p.t.Helper()
	var b [ctlLen]byte
	if _, err := io.ReadFull(p.c, b[:]); err != nil {
		p.t.Fatal(err)
	}
	m, err := parseCtl(&b, toDialer)
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

// strangerQP is an endpoint of a queue pair that does not exist: good
// enough to connect to, never to reach.
var strangerQP = verbs.Endpoint{QPN: 0xabcde, PSN: 7, GID: verbs.GID{10: 0xff, 11: 0xff, 12: 127, 15: 1},
	Port: 1, GIDIndex: 1, MTU: verbs.MTU1024, RdAtomic: 1}

// dialRaw connects to tr as a peer played by the test.
func dialRaw(t *testing.T, tr *Transport) rawPeer {
	t.Helper()
	addr, _ := tr.Bind()
	_, part, _ := addr.parse()
	p, _ := parseTCPPart(part)
	c, err := net.Dial("tcp", p.hostport)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var hb [verbsHelloLen]byte
	if err := putVerbsHello(&hb, verbsHello{hello: hello{version: verbsProtocol.version, to: p.nonce}, qp: strangerQP}); err != nil {
		t.Fatal(err)
	}
	peer := rawPeer{t, c}
	peer.send(hb[:])
	var ab [verbsAnswerLen]byte
	if _, err := io.ReadFull(c, ab[:]); err != nil {
		t.Fatal(err)
	}
	if a, err := parseVerbsAnswer(&ab); err != nil || a.verdict != answerAccepted {
		t.Fatalf("answer %+v, %v", a, err)
	}
	return peer
}

// listenRaw has tr connect to a listener played by the test, and returns
// the test's end.
func listenRaw(t *testing.T, tr *Transport) rawPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		var hb [verbsHelloLen]byte
		io.ReadFull(c, hb[:])
		var ab [verbsAnswerLen]byte
		putVerbsAnswer(&ab, verbsAnswer{version: verbsProtocol.version, qp: strangerQP, notify: notifyTarget{addr: 4096, rkey: 1}})
		c.Write(ab[:])
		accepted <- c
	}()
	if err := tr.Connect(testContext(t), makeAddress("verbs", tcpPart{nonce: 1, hostport: ln.Addr().String()}.encode())); err != nil {
		t.Fatal(err)
	}
	c := <-accepted
	t.Cleanup(func() { c.Close() })
	return rawPeer{t, c}
}

// TestVerbsSideChannel plays peers that ask about keys, answer, and break
// the side channel's protocol.
func TestVerbsSideChannel(t *testing.T) {
	needVerbs(t)
	ctx := testContext(t)
	broken := func(t *testing.T, tr *Transport, saying string) {
		t.Helper()
		if err := tr.WaitForWrite(ctx); !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), saying) {
			t.Fatalf("got %v, want ErrBroken saying %q", err, saying)
		}
	}
	t.Run("questions", func(t *testing.T) {
		tr := newBound(t, WithProvider("verbs"))
		peer := dialRaw(t, tr)
		m := register(t, make([]byte, 100))
		empty := register(t, nil)
		peer.sendCtl(ctl{kind: ctlResolve, key: m.key ^ 1})
		if got := peer.receiveCtl(true); got != (ctl{kind: ctlResolved, key: m.key ^ 1, status: resolvedUnregistered}) {
			t.Fatalf("answer about an unknown key: %+v", got)
		}
		peer.sendCtl(ctl{kind: ctlResolve, key: m.key})
		if got := peer.receiveCtl(true); got.status != resolvedOK || got.addr != m.base || got.n != 100 || got.rkey == 0 {
			t.Fatalf("answer about a registered key: %+v, want the registration [%#x, +100)", got, m.base)
		}
		peer.sendCtl(ctl{kind: ctlResolve, key: empty.key})
		if got := peer.receiveCtl(true); got != (ctl{kind: ctlResolved, key: empty.key, addr: empty.base}) {
			t.Fatalf("answer about an empty registration: %+v", got)
		}
		// Deregistering revokes what the peer was told; it must release.
		done := make(chan error, 1)
		go func() { done <- m.Deregister() }()
		if got := peer.receiveCtl(true); got != (ctl{kind: ctlRevoke, key: m.key}) {
			t.Fatalf("on Deregister the peer got %+v, want a revocation", got)
		}
		select {
		case err := <-done:
			t.Fatalf("Deregister returned (%v) before the peer released the key", err)
		case <-time.After(20 * time.Millisecond):
		}
		peer.sendCtl(ctl{kind: ctlReleased, key: m.key})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		tr.mu.Lock()
		err := tr.err
		tr.mu.Unlock()
		if err != nil {
			t.Fatalf("the transport broke: %v", err)
		}
	})
	for _, c := range []struct {
		name   string
		msg    []byte
		saying string
	}{
		{"unknown kind", func() []byte { b := [ctlLen]byte{0: 77, 8: 1}; return b[:] }(), "kind 77"},
		{"answer to the listener", func() []byte {
			var b [ctlLen]byte
			putCtl(&b, ctl{kind: ctlResolved, key: 5})
			return b[:]
		}(), "kind 2"},
		{"release of what was not revoked", func() []byte {
			var b [ctlLen]byte
			putCtl(&b, ctl{kind: ctlReleased, key: 5})
			return b[:]
		}(), "was not revoked"},
		{"cut short", []byte{1, 0, 0}, "unexpected EOF"},
	} {
		t.Run("dialer sends "+c.name, func(t *testing.T) {
			tr := newBound(t, WithProvider("verbs"))
			peer := dialRaw(t, tr)
			peer.send(c.msg)
			if c.name == "cut short" {
				peer.c.Close()
			}
			broken(t, tr, c.saying)
		})
	}
	for _, c := range []struct {
		name   string
		msg    ctl
		saying string
	}{
		{"an answer not asked for", ctl{kind: ctlResolved, key: 9, status: resolvedUnregistered}, "not asked about"},
		{"a revocation of a key not held", ctl{kind: ctlRevoke, key: 9}, "does not hold"},
	} {
		t.Run("listener sends "+c.name, func(t *testing.T) {
			tr := newBound(t, WithProvider("verbs"))
			peer := listenRaw(t, tr)
			peer.sendCtl(c.msg)
			broken(t, tr, c.saying)
		})
	}
	t.Run("listener answers, then revokes", func(t *testing.T) {
		tr := newBound(t, WithProvider("verbs"))
		peer := listenRaw(t, tr)
		src := register(t, make([]byte, 8))
		res := make(chan error, 1)
		go func() { res <- tr.Read(ctx, mutableView(t, src, 0, 8), RemoteBuffer{Addr: 64, Len: 8, Key: 3}) }()
		if got := peer.receiveCtl(false); got != (ctl{kind: ctlResolve, key: 3}) {
			t.Fatalf("the transport asked %+v", got)
		}
		peer.sendCtl(ctl{kind: ctlResolved, key: 3, status: resolvedOK, rkey: 1, addr: 128, n: 64})
		if err := <-res; !errors.Is(err, ErrBounds) || !tr.Connected() {
			t.Fatalf("read outside the registration the peer described: %v, want ErrBounds, transport usable", err)
		}
		peer.sendCtl(ctl{kind: ctlRevoke, key: 3})
		if got := peer.receiveCtl(false); got != (ctl{kind: ctlReleased, key: 3}) {
			t.Fatalf("after a revocation the transport sent %+v, want a release", got)
		}
	})
}
