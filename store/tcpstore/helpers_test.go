package tcpstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// testTimeout bounds connecting and every exchange in tests that expect
// them to succeed.
const testTimeout = 10 * time.Second

// startServer starts a server on a free loopback port, closed at cleanup.
func startServer(t testing.TB, opts ...tcpstore.ServerOption) *tcpstore.Server {
	t.Helper()
	srv, err := tcpstore.Listen(context.Background(), "127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Server.Close: %v", err)
		}
	})
	return srv
}

// dial connects a client, closed at cleanup.
func dial(t testing.TB, addr string, opts ...tcpstore.DialOption) *tcpstore.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := tcpstore.Dial(ctx, addr, append([]tcpstore.DialOption{tcpstore.WithTimeout(testTimeout)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testContext bounds a test's blocking calls.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
