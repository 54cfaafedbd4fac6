//go:build linux

package nvl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// peerEnv, when set, makes this test binary the peer process of
// TestPeerProcessKilled: it dials the address in peerEnv, sends frames
// without end, inline and by address, and waits to be killed.
const peerEnv = "GOCOMMS_NVL_TEST_PEER"

// TestPeerProcessKilled kills a peer process in the middle of a stream.
// Every frame it completed arrives intact and in order, then one error
// naming the peer's process; and this process keeps no mapping of the
// segment after, so that nothing is left of it once both are gone.
func TestPeerProcessKilled(t *testing.T) {
	if addr := os.Getenv(peerEnv); addr != "" {
		streamUntilKilled(addr)
		return
	}
	l, err := New().Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerProcessKilled$")
	cmd.Env = append(os.Environ(), peerEnv+"="+l.Addr())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := fmt.Sprintf("pid%d", cmd.Process.Pid); !strings.HasSuffix(c.RemoteAddr(), want) {
		t.Fatalf("remote address %q does not name the peer's process %d", c.RemoteAddr(), cmd.Process.Pid)
	}
	if mapped(t) == 0 {
		t.Fatal("no segment mapped while connected")
	}
	r := transporttest.NewRecorder()
	c.Start(r)
	r.WaitFrames(t, 200)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	frames, err := r.WaitError(t)
	if !errors.Is(err, transport.ErrClosed) || !strings.Contains(err.Error(), fmt.Sprint(cmd.Process.Pid)) {
		t.Errorf("HandleError got %v, want ErrClosed naming process %d", err, cmd.Process.Pid)
	}
	for i, f := range frames {
		if f.Header != testHeader(i) || len(f.Payload) != peerPayload(i) || f.Payload[len(f.Payload)-1] != byte(i) {
			t.Fatalf("frame %d of %d arrived as %+v with %d bytes", i, len(frames), f.Header, len(f.Payload))
		}
	}
	<-c.(*conn).Drained()
	if n := mapped(t); n != 0 {
		t.Errorf("%d segment mappings left after the connection ended", n)
	}
	t.Logf("%d frames, then: %v", len(frames), err)
}

// peerPayload alternates payloads that go through the ring with ones
// that go by address.
func peerPayload(i int) int {
	if i%2 == 0 {
		return 4096
	}
	return 512 << 10
}

func streamUntilKilled(addr string) {
	c, err := New().Dial(context.Background(), addr, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		p := transport.GetBuffer(peerPayload(i))
		p[len(p)-1] = byte(i)
		if err := c.Send(transport.Frame{Header: testHeader(i), Payload: p}); err != nil {
			fmt.Fprintln(os.Stderr, "peer:", err)
			os.Exit(2)
		}
		if i%64 == 63 {
			time.Sleep(time.Millisecond) // let the receiver keep up
		}
	}
}

// mapped counts this process's mappings of connection segments.
func mapped(t *testing.T) int {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(maps), "memfd:gocomms-nvl")
}
