package test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocomms/gocomms/gpu/cuda/fakecuda"
)

// commnode is the binary TestMain builds for every test.
var commnode string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "commnode-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	commnode = filepath.Join(dir, "commnode")
	build := exec.Command("go", "build", "-o", commnode, "github.com/gocomms/gocomms/cmd/commnode")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building commnode:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort asks the kernel for a port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rankProc is one rank started by hand, as a launcher would.
type rankProc struct {
	rank           int
	cmd            *exec.Cmd
	stdout, stderr output
	done           chan struct{}
	err            error // Wait's
	elapsed        time.Duration
	ended          time.Time
}

// output is what a process writes to stdout or stderr, which a test may
// read, or wait for a line of, while the process runs.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed at the next write
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.written != nil {
		close(o.written)
		o.written = nil
	}
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output holds a line that matches re, and fails
// t if it does not within limit, or if p exits first.
func (p *rankProc) waitFor(t *testing.T, o *output, re *regexp.Regexp, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		o.mu.Lock()
		found := re.Match(o.buf.Bytes())
		if o.written == nil {
			o.written = make(chan struct{})
		}
		written := o.written
		o.mu.Unlock()
		if found {
			return
		}
		select {
		case <-written:
		case <-p.done:
			t.Fatalf("rank %d exited before it printed %q: %v\nstderr:\n%s", p.rank, re, p.err, p.stderr.String())
		case <-deadline:
			t.Fatalf("rank %d printed no %q within %v\nstdout:\n%s\nstderr:\n%s", p.rank, re, limit, p.stdout.String(), p.stderr.String())
		}
	}
}

// startRanks starts the ranks listed of a job of size ranks, each running
// commnode with args, with torchrun's variables set.
func startRanks(t *testing.T, size int, ranks []int, args ...string) []*rankProc {
	t.Helper()
	return startRanksOn(t, freePort(t), size, ranks, args...)
}

// startRanksOn is startRanks with the store on port, for a test that runs
// a rank of its own.
func startRanksOn(t *testing.T, port, size int, ranks []int, args ...string) []*rankProc {
	t.Helper()
	procs := make([]*rankProc, len(ranks))
	for i, r := range ranks {
		p := &rankProc{rank: r, done: make(chan struct{})}
		p.cmd = exec.Command(commnode, args...)
		p.cmd.Env = append(os.Environ(),
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(size),
			"LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(size),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		start := time.Now()
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			p.err = p.cmd.Wait()
			p.ended = time.Now()
			p.elapsed = p.ended.Sub(start)
			close(p.done)
		}()
		procs[i] = p
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return procs
}

// wait waits for every process, failing the test if one outlives limit.
func wait(t *testing.T, procs []*rankProc, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			t.Fatalf("rank %d still running after %v\nstderr:\n%s", p.rank, limit, p.stderr.String())
		}
	}
}

// runLaunch runs commnode launch -n n -- commnode args... and returns its
// combined output.
func runLaunch(t *testing.T, ctx context.Context, n int, args ...string) ([]byte, error) {
	t.Helper()
	all := append([]string{"launch", "-n", strconv.Itoa(n), "--", commnode}, args...)
	cmd := exec.CommandContext(ctx, commnode, all...)
	var out bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &out}, lockedWriter{&mu, &out}
	err := cmd.Run()
	return out.Bytes(), err
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// useFakeCUDA makes the commnode processes t starts load the fake CUDA
// driver, with one device, built for the test, or skips t where it cannot
// be built.
func useFakeCUDA(t *testing.T) {
	t.Helper()
	dir := fakecuda.BuildFor(t)
	for _, kv := range fakecuda.Env(dir, 1, 20000, true) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}
