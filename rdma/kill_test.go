package rdma

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// peerEnv, when set, makes this test binary the peer process of
// TestPeerKilled. Its value is "SIZE ADDRESS": the peer registers SIZE
// bytes, prints its Address and the buffer's RemoteBuffer in hex, connects
// to ADDRESS (hex), and waits to be killed.
const peerEnv = "GOCOMMS_RDMA_TEST_PEER"

// TestPeerKilled kills a peer process in the middle of a large write to
// its memory. The pending write and a pending WaitForWrite fail with
// ErrBroken, later calls fail at once with the same error, and nothing
// hangs.
func TestPeerKilled(t *testing.T) {
	if v := os.Getenv(peerEnv); v != "" {
		beKilledPeer(v)
		return
	}
	size := 256 << 20
	if testing.Short() {
		size = 32 << 20
	}
	tr := newBound(t)
	addr, _ := tr.Bind()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerKilled$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %x", peerEnv, size, []byte(addr)))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the peer's handles: %v", err)
	}
	var peerAddr, wire []byte
	if f := strings.Fields(line); len(f) == 2 {
		peerAddr, _ = hex.DecodeString(f[0])
		wire, _ = hex.DecodeString(f[1])
	}
	var remote RemoteBuffer
	if err := remote.UnmarshalBinary(wire); err != nil {
		t.Fatalf("peer printed %q: %v", line, err)
	}
	ctx := testContext(t)
	if err := tr.Connect(ctx, Address(peerAddr)); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- tr.WaitForWrite(ctx) }() // served by the peer's connection to us

	src := register(t, make([]byte, size))
	v := view(t, src, 0, size)
	writes := make(chan error)
	go func() {
		for {
			err := tr.Write(ctx, v, remote, false)
			writes <- err
			if err != nil {
				return
			}
		}
	}()
	if err := <-writes; err != nil {
		t.Fatalf("first write: %v", err)
	}
	// The next write is on its way: kill the peer under it.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var werr error
	for werr == nil {
		werr = <-writes // a write may still complete; the one after cannot
	}
	if !errors.Is(werr, ErrBroken) {
		t.Fatalf("write pending when the peer died: %v, want ErrBroken", werr)
	}
	if err := <-waitErr; !errors.Is(err, ErrBroken) {
		t.Fatalf("WaitForWrite pending when the peer died: %v, want ErrBroken", err)
	}
	// A write that waited on the dead peer would end with ctx.
	err = tr.Write(ctx, v, remote, false)
	if !errors.Is(err, ErrBroken) {
		t.Fatalf("write after the break: %v, want ErrBroken at once", err)
	}
	if tr.Connected() {
		t.Fatal("Connected after the peer died")
	}
	t.Logf("pending write: %v", werr)
}

func beKilledPeer(v string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(2)
	}
	f := strings.Fields(v)
	if len(f) != 2 {
		fail(fmt.Errorf("%s=%q", peerEnv, v))
	}
	size, err := strconv.Atoi(f[0])
	if err != nil {
		fail(err)
	}
	parent, err := hex.DecodeString(f[1])
	if err != nil {
		fail(err)
	}
	tr, err := New(WithListenHost("127.0.0.1"))
	if err != nil {
		fail(err)
	}
	addr, err := tr.Bind()
	if err != nil {
		fail(err)
	}
	m, err := Register(make([]byte, size))
	if err != nil {
		fail(err)
	}
	wire, _ := m.Remote().MarshalBinary()
	fmt.Printf("%x %x\n", []byte(addr), wire)
	if err := tr.Connect(context.Background(), Address(parent)); err != nil {
		fail(err)
	}
	select {}
}
