package tcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// peerEnv, when set, makes this test binary the peer process of
// TestPeerProcessKilled: it dials the address in peerEnv, queues a stream
// of 80 MB, more than loopback carries before the kill, and waits to be
// killed.
const peerEnv = "GOCOMMS_TCP_TEST_PEER"

// TestPeerProcessKilled kills a peer process in the middle of a stream.
// Every frame it completed arrives intact and in order, then one error
// naming the peer.
func TestPeerProcessKilled(t *testing.T) {
	if addr := os.Getenv(peerEnv); addr != "" {
		streamUntilKilled(addr)
		return
	}
	_, l := listen(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerProcessKilled$")
	cmd.Env = append(os.Environ(), peerEnv+"="+l.Addr())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	c, hello, err := l.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := fmt.Sprint(cmd.Process.Pid); string(hello) != want {
		t.Fatalf("hello %q, want the peer's pid %s", hello, want)
	}
	r := newRecorder()
	c.Start(r)
	r.waitFrames(t, 1000)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	if !errors.Is(err, transport.ErrClosed) || !strings.Contains(err.Error(), c.RemoteAddr()) {
		t.Errorf("HandleError got %v, want ErrClosed naming the peer %s", err, c.RemoteAddr())
	}
	for i, f := range frames {
		if f.Header != testHeader(i) || len(f.Payload) != 4096 || f.Payload[4095] != byte(i) {
			t.Fatalf("frame %d of %d arrived as %+v with %d bytes", i, len(frames), f.Header, len(f.Payload))
		}
	}
	t.Logf("%d frames, then: %v", len(frames), err)
}

func streamUntilKilled(addr string) {
	c, err := New().Dial(context.Background(), addr, []byte(fmt.Sprint(os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(2)
	}
	for i := range 20_000 {
		p := transport.GetBuffer(4096)
		p[4095] = byte(i)
		if err := c.Send(transport.Frame{Header: testHeader(i), Payload: p}); err != nil {
			fmt.Fprintln(os.Stderr, "peer:", err)
			os.Exit(2)
		}
	}
	select {}
}
