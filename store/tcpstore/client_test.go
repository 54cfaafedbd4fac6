package tcpstore_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store/tcpstore"
)

func TestDialFindsV2(t *testing.T) {
	srv := startServer(t)
	if v := dial(t, srv.Addr().String()).Version(); v != tcpstore.Version2 {
		t.Errorf("detected %v against a Server, want 2.x", v)
	}
}

// TestDialGivesUp: with no server, Dial retries until its timeout and says
// why it stopped.
func TestDialGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	_, err = tcpstore.Dial(context.Background(), addr, tcpstore.WithTimeout(300*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial with no server: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial gave up after %v, its timeout is 300ms", d)
	}
	if _, err := tcpstore.Dial(context.Background(), addr, tcpstore.WithTimeout(0)); err == nil {
		t.Error("Dial with a zero timeout succeeded")
	}
}

// TestDoneContextSendsNothing: a call whose context has ended fails before
// touching the connection.
func TestDoneContextSendsNothing(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Set(ctx, "k", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a cancelled context: %v", err)
	}
	if ok, err := c.Check(testContext(t), "k"); err != nil || ok {
		t.Errorf("Check = %v, %v; the cancelled Set must not have been sent", ok, err)
	}
}

// TestStaleConnectionNotUsed: a Set after the server restarted reaches the
// new server instead of vanishing into the old connection.
func TestStaleConnectionNotUsed(t *testing.T) {
	old, err := tcpstore.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := old.Addr().String()
	c := dial(t, addr)
	ctx := testContext(t)
	if err := c.Set(ctx, "before", nil); err != nil {
		t.Fatal(err)
	}
	old.Close()
	srv, err := tcpstore.Listen(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := c.Set(ctx, "after", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := dial(t, addr).Get(ctx, "after"); err != nil || string(v) != "v" {
		t.Errorf("Get on the new server = %q, %v", v, err)
	}
}
