package gocomms_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport/tcp"
)

// TestIPv6Loopback runs three ranks over TCP on ::1: every address they
// publish and dial is bracketed, and the collectives are correct.
func TestIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	ln.Close()
	nw := tcp.New(tcp.WithListenHost("::1"))
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	if addr := l.Addr(); !strings.HasPrefix(addr, "[::1]:") {
		t.Errorf("listener on ::1 publishes %q, want [::1]:port", addr)
	}
	l.Close()
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		x := []int64{int64(c.Rank() + 1)}
		if err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
			return err
		}
		if x[0] != 6 {
			return fmt.Errorf("all_reduce over ::1 = %d, want 6", x[0])
		}
		return c.Finalize(ctx)
	}, gocomms.WithNetwork(nw))
}
