package tcpstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/tcpstore"
)

// interopTimeout bounds an interop test's calls: importing torch alone
// takes seconds, more on a loaded machine.
const interopTimeout = time.Minute

// The interop tests run PyTorch 1.13 from Debian's python3-torch, which
// Debian's Python carries; the pyenv Python first on PATH does not. They
// skip when it cannot import torch.
const torchPython = "/usr/bin/python3"

// python is a running script of testdata, talking in lines.
type python struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr bytes.Buffer
}

// startPython runs script and skips the test if it cannot import torch:
// the scripts say so on their first line.
func startPython(t *testing.T, script string, args ...string) *python {
	t.Helper()
	if _, err := os.Stat(torchPython); err != nil {
		t.Skipf("PyTorch unavailable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), interopTimeout)
	t.Cleanup(cancel)
	p := &python{t: t, cmd: exec.CommandContext(ctx, torchPython, append([]string{"testdata/" + script}, args...)...)}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdout = bufio.NewScanner(stdout)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Wait()
	})
	if why, ok := strings.CutPrefix(p.line(), "no torch: "); ok {
		t.Skipf("PyTorch unavailable: %s cannot import torch (%s); apt-get install python3-torch", torchPython, why)
	}
	return p
}

// line reads the script's next line of output.
func (p *python) line() string {
	p.t.Helper()
	if !p.stdout.Scan() {
		p.cmd.Wait()
		p.t.Fatalf("%s ended early: %v\n%s", p.cmd.Args[1], p.cmd.ProcessState, p.stderr.String())
	}
	return p.stdout.Text()
}

// expect reads a line that must start with prefix and returns the rest.
func (p *python) expect(prefix string) string {
	p.t.Helper()
	l := p.line()
	rest, ok := strings.CutPrefix(l, prefix)
	if !ok {
		p.t.Fatalf("%s said %q, want %q...", p.cmd.Args[1], l, prefix)
	}
	return strings.TrimSpace(rest)
}

// finish waits for the script to exit cleanly.
func (p *python) finish() {
	p.t.Helper()
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("%s: %v\n%s", p.cmd.Args[1], err, p.stderr.String())
	}
}

// TestTorchClient runs a PyTorch 1.13 TCPStore client against a Server.
func TestTorchClient(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dial(t, srv.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), interopTimeout)
	defer cancel()
	if err := c.Set(ctx, "/from-go", []byte("hello from go")); err != nil {
		t.Fatal(err)
	}

	_, port, _ := net.SplitHostPort(srv.Addr().String())
	py := startPython(t, "torch_client.py", "127.0.0.1", port)
	pyKeys := py.expect("num_keys")
	if n, err := c.NumKeys(ctx); err != nil || pyKeys != strconv.FormatInt(n, 10) {
		t.Errorf("PyTorch counts %s keys, Go %d (%v)", pyKeys, n, err)
	}
	py.expect("waiting")
	// The script's timed-out WAIT stays registered (1.13 sends no
	// CANCEL_WAIT), so its WAIT for /late makes two.
	waitFor(t, func() bool { return tcpstore.Registrations(srv) == 2 })
	if err := c.Set(ctx, "/late", []byte("woken")); err != nil {
		t.Fatal(err)
	}
	py.expect("done")
	py.finish()

	for key, want := range map[string]string{
		"/n": "4", "/c": "z", "init/": "1", "/pfx/k": "prefixed",
	} {
		if v, err := c.Get(ctx, key); err != nil || string(v) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", key, v, err, want)
		}
	}
	// WithPrefix(s, "") is PyTorch's view of a TCPStore, and PrefixStore
	// nests as WithPrefix does.
	torchView := store.WithPrefix(store.WithPrefix(c, ""), "pfx")
	if v, err := torchView.Get(ctx, "k"); err != nil || string(v) != "prefixed" {
		t.Errorf("Get through prefixes = %q, %v", v, err)
	}
	if ok, err := c.Check(ctx, "/a"); err != nil || ok {
		t.Errorf("Check(/a) after PyTorch deleted it = %v, %v", ok, err)
	}
	if n := tcpstore.Registrations(srv); n != 0 {
		t.Errorf("%d registrations left after the script exited", n)
	}
}

// TestClientOfTorchServer runs a Client, detecting the dialect itself,
// against a PyTorch 1.13 TCPStore server.
func TestClientOfTorchServer(t *testing.T) {
	t.Parallel()
	py := startPython(t, "torch_server.py")
	addr := net.JoinHostPort("127.0.0.1", py.expect("port"))
	ask := func(cmd map[string]string) map[string]any {
		t.Helper()
		line, _ := json.Marshal(cmd)
		if _, err := fmt.Fprintf(py.stdin, "%s\n", line); err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(py.line()), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	c := dial(t, addr)
	if c.Version() != tcpstore.Version1 {
		t.Fatalf("detected %v, want 1.x", c.Version())
	}
	ctx, cancel := context.WithTimeout(context.Background(), interopTimeout)
	defer cancel()
	mustGet := func(key, want string) {
		t.Helper()
		if v, err := c.Get(ctx, key); err != nil || string(v) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", key, v, err, want)
		}
	}
	mustGet("/from-torch", "hi")

	if err := c.Set(ctx, "/go/k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got := ask(map[string]string{"op": "get", "key": "go/k"}); got["value"] != "v" {
		t.Errorf("PyTorch read %v", got)
	}
	for i, want := range []int64{3, 1} {
		if n, err := c.Add(ctx, "/go/n", []int64{3, -2}[i]); err != nil || n != want {
			t.Errorf("Add = %d, %v; want %d", n, err, want)
		}
	}
	for _, cas := range []struct{ expected, desired, want string }{
		{"x", "a", "x"}, {"", "a", "a"}, {"a", "b", "b"}, {"a", "c", "b"},
	} {
		if v, err := c.CompareSet(ctx, "/go/cas", []byte(cas.expected), []byte(cas.desired)); err != nil || string(v) != cas.want {
			t.Errorf("CompareSet(%q, %q) = %q, %v; want %q", cas.expected, cas.desired, v, err, cas.want)
		}
	}
	if ok, err := c.Delete(ctx, "/go/cas"); err != nil || !ok {
		t.Errorf("Delete = %v, %v", ok, err)
	}
	if ok, err := c.Check(ctx, "/go/k", "/go/cas"); err != nil || ok {
		t.Errorf("Check after Delete = %v, %v", ok, err)
	}
	if n, err := c.NumKeys(ctx); err != nil || n != 3 {
		t.Errorf("NumKeys = %d, %v; want 3", n, err)
	}

	// The emulated queries.
	for _, part := range []string{"a", "", "bc"} {
		if err := c.Append(ctx, "/go/log", []byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.MultiSet(ctx, []string{"/go/m1", "/go/m2"}, [][]byte{[]byte("1"), []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if vs, err := c.MultiGet(ctx, "/go/m2", "/go/log", "/go/m1"); err != nil || string(bytes.Join(vs, []byte(","))) != "2,abc,1" {
		t.Errorf("MultiGet = %q, %v", vs, err)
	}
	if got := ask(map[string]string{"op": "get", "key": "go/log"}); got["value"] != "abc" {
		t.Errorf("PyTorch read the appended value as %v", got)
	}

	// A wait released by PyTorch's write.
	late := make(chan error, 1)
	go func() { late <- c.Wait(ctx, "/late") }()
	ask(map[string]string{"op": "set", "key": "late", "value": "x"})
	if err := <-late; err != nil {
		t.Errorf("Wait released by PyTorch: %v", err)
	}

	// A wait that times out drops its connection, since 1.x cannot cancel
	// it; the late STOP_WAITING then cannot misalign a later reply.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := c.Wait(short, "/stale"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its deadline: %v", err)
	}
	ask(map[string]string{"op": "set", "key": "stale", "value": ""})
	if n, err := c.Add(ctx, "/go/n", 1); err != nil || n != 2 {
		t.Errorf("Add after a timed-out wait = %d, %v; want 2", n, err)
	}

	// The server closes the connection on ADD to text; the client carries on.
	if err := c.Set(ctx, "/go/text", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(ctx, "/go/text", 1); err == nil {
		t.Error("Add to text succeeded")
	}
	mustGet("/go/text", "abc")
	py.finish()
}

// TestDialBeforeListen: Dial keeps retrying until the server is up.
func TestDialBeforeListen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	type dialed struct {
		c   *tcpstore.Client
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		c, err := tcpstore.Dial(testContext(t), addr, tcpstore.WithTimeout(testTimeout))
		ch <- dialed{c, err}
	}()
	srv, err := tcpstore.Listen(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := <-ch
	if d.err != nil {
		t.Fatal(d.err)
	}
	defer d.c.Close()
	if n, err := d.c.NumKeys(testContext(t)); err != nil || n != 0 {
		t.Errorf("NumKeys = %d, %v", n, err)
	}
}
