package rdma

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
	"unsafe"
)

// newPair returns two transports on the loopback interface, each bound
// and connected to the other, closed when the test ends.
func newPair(t testing.TB, opts ...Option) (a, b *Transport) {
	t.Helper()
	a, b = newBound(t, opts...), newBound(t, opts...)
	connect(t, a, b)
	connect(t, b, a)
	return a, b
}

// newBound returns a bound transport on the loopback interface, closed
// when the test ends.
func newBound(t testing.TB, opts ...Option) *Transport {
	t.Helper()
	tr, err := New(append([]Option{WithListenHost("127.0.0.1")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Bind(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// connect connects from to to's address.
func connect(t testing.TB, from, to *Transport) {
	t.Helper()
	addr, err := to.Bind()
	if err != nil {
		t.Fatal(err)
	}
	if err := from.Connect(testContext(t), addr); err != nil {
		t.Fatal(err)
	}
}

// testContext bounds a test's calls, so that a hang fails the test with
// a message rather than at the binary's timeout.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// alignedBytes returns n zero bytes starting at an 8-byte aligned address,
// as atomics need.
func alignedBytes(n int) []byte {
	words := make([]uint64, (n+7)/8)
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

// register registers buf, deregistering it when the test ends unless the
// test did.
func register(t testing.TB, buf []byte) *Memory {
	t.Helper()
	m, err := Register(buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Deregister() })
	return m
}

func view(t testing.TB, m *Memory, off, n int) View {
	t.Helper()
	v, err := m.View(off, n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mutableView(t testing.TB, m *Memory, off, n int) MutableView {
	t.Helper()
	v, err := m.MutableView(off, n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func slice(t testing.TB, b RemoteBuffer, off, n uint64) RemoteBuffer {
	t.Helper()
	s, err := b.Slice(off, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkHandshakeDeadline checks that a, of the named provider, connecting
// to a listener that never answers, gives up at the context's deadline.
func checkHandshakeDeadline(t *testing.T, ctx context.Context, a *Transport, provider string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := makeAddress(provider, tcpPart{nonce: 1, hostport: ln.Addr().String()}.encode())
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := a.Connect(short, addr); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect to a listener that never answers: %v, want DeadlineExceeded", err)
	}
}
