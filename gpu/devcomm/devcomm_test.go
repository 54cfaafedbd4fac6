package devcomm

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/gpu/cuda/fakecuda"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// childVar makes the test binary the group's second rank.
const childVar = "GOCOMMS_DEVCOMM_CHILD"

// TestGroupTimeoutNamesTheRank runs a device group of two processes on
// the fake driver, the second of which never issues the all-reduce the
// first does: the first times out, names rank 1, and aborts its
// communicator.
func TestGroupTimeoutNamesTheRank(t *testing.T) {
	if rank := os.Getenv(childVar); rank != "" {
		runRank(t, rank == "0")
		return
	}
	dir, err := fakecuda.Build()
	if errors.Is(err, fakecuda.ErrUnsupported) {
		t.Skipf("skip: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Each rank reads the other's record from descriptor 3 and writes its
	// own to 4.
	r0, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r1, w0, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rank := func(r string, in, out *os.File) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGroupTimeoutNamesTheRank$", "-test.count=1", "-test.v")
		cmd.Env = append(append(os.Environ(), fakecuda.Env(dir, 1, 20000, true)...), childVar+"="+r)
		cmd.ExtraFiles = []*os.File{in, out}
		return cmd
	}
	var log strings.Builder
	zero, one := rank("0", r0, w0), rank("1", r1, w1)
	one.Stdout, one.Stderr = &log, &log
	if err := one.Start(); err != nil {
		t.Fatal(err)
	}
	out, err := zero.CombinedOutput()
	w0.Close() // rank 1 ends once rank 0 has
	one.Wait()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("rank 0: %v\n%s\nrank 1:\n%s", err, out, log.String())
	}
	t.Logf("rank 0:\n%s", out)
}

// runRank is one rank: rank 0 issues the all-reduce; rank 1 only joins
// the group, and waits for rank 0 to end.
func runRank(t *testing.T, first bool) {
	ctx, err := cuda.Shared(0)
	if err != nil {
		t.Fatal(err)
	}
	rank, in, out := 1, bufio.NewReader(os.NewFile(3, "from the peer")), os.NewFile(4, "to the peer")
	if first {
		rank = 0
	}
	g := joinGroup(t, ctx, rank, in, out)
	if !first {
		io.Copy(io.Discard, in)
		g.Close()
		return
	}
	b, err := New(refusingHost{}, tensor.CUDA(0), ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := ctx.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tensor.OnDevice(tensor.CUDA(0), mem, 0, tensor.Float32, 16)
	done := make(ended, 1)
	b.Issue(&backend.Op{Name: backend.OpAllReduce, Kind: algorithms.AllReduce, DType: tensor.Float32,
		Reduce: reduce.New(reduce.Sum), Root: -1, Counts: []int{16}, Inputs: []*tensor.Tensor{x},
		Outputs: []*tensor.Tensor{x}, Timeout: 300 * time.Millisecond}, done)
	select {
	case err := <-done:
		if !errors.Is(err, commerr.ErrTimeout) || !strings.Contains(err.Error(), "ranks [1] never reached") {
			t.Fatalf("the all-reduce ended with %v; want a timeout naming rank 1", err)
		}
		t.Log(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the all-reduce did not time out")
	}
	again := make(ended, 1)
	b.Issue(&backend.Op{Name: backend.OpBarrier, Kind: algorithms.Barrier, Root: -1, Timeout: time.Second}, again)
	if err := <-again; !errors.Is(err, commerr.ErrTimeout) {
		t.Errorf("a barrier after the timeout ended with %v; want the abort's timeout", err)
	}
}

// joinGroup exchanges the two ranks' records, one hex line each way.
func joinGroup(t *testing.T, ctx *cuda.Context, rank int, in *bufio.Reader, out io.Writer) *nvl.DeviceGroup {
	t.Helper()
	g, rec, err := nvl.NewDeviceGroup(ctx, rank, 2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(out, hex.EncodeToString(rec)+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := in.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	other, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	recs := [][]byte{rec, other}
	if rank == 1 {
		recs[0], recs[1] = other, rec
	}
	if err := g.Open(recs); err != nil {
		t.Fatal(err)
	}
	return g
}

// refusingHost is a host backend the group's operations never reach.
type refusingHost struct{}

func (refusingHost) Name() string { return "refusing" }
func (refusingHost) Issue(_ *backend.Op, done backend.Completion) func(error) {
	done.Finished(errors.New("staged"))
	return nil
}
func (refusingHost) Split(context.Context, []int, *backend.Config, backend.Exchange) (backend.Backend, error) {
	return nil, errors.New("no split")
}
func (refusingHost) Abort(error)                    {}
func (refusingHost) Finalize(context.Context) error { return nil }

// ended is a Completion that hands its end to whoever waits.
type ended chan error

func (ended) Started()             {}
func (e ended) Finished(err error) { e <- err }
