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
	inPair(t, "TestGroupTimeoutNamesTheRank", runTimeout)
}

// TestGroupChain runs a device group of two processes through a chain of
// collectives issued back to back, each reading the one before, waited
// for at the end only.
func TestGroupChain(t *testing.T) { inPair(t, "TestGroupChain", runChain) }

// inPair runs test as two processes of a device group on the fake
// driver, calling run in each with its rank, and fails unless rank 0's
// passes.
func inPair(t *testing.T, test string, run func(t *testing.T, b *Backend, ctx *cuda.Context, rank int)) {
	if rank := os.Getenv(childVar); rank != "" {
		r := 0
		if rank == "1" {
			r = 1
		}
		runRank(t, r, run)
		return
	}
	dir := fakecuda.BuildFor(t)
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
		cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
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
	err1 := one.Wait()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("rank 0: %v\n%s\nrank 1:\n%s", err, out, log.String())
	}
	if err1 != nil || !strings.Contains(log.String(), "--- PASS") {
		t.Fatalf("rank 1: %v\n%s\nrank 0:\n%s", err1, log.String(), out)
	}
	t.Logf("rank 0:\n%s", out)
}

// runRank joins the group as rank, runs run on a backend over it, and
// waits for its peer to end: rank 1 until rank 0 closes the pipe.
func runRank(t *testing.T, rank int, run func(t *testing.T, b *Backend, ctx *cuda.Context, rank int)) {
	ctx, err := cuda.Shared(0)
	if err != nil {
		t.Fatal(err)
	}
	in, out := bufio.NewReader(os.NewFile(3, "from the peer")), os.NewFile(4, "to the peer")
	g := joinGroup(t, ctx, rank, in, out)
	b, err := New(refusingHost{}, tensor.CUDA(0), ctx, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b, ctx, rank)
	if rank == 1 {
		io.Copy(io.Discard, in)
	}
}

// issue issues op on b and returns where its end comes.
func issue(b *Backend, op *backend.Op) ended {
	done := make(ended, 1)
	op.Root, op.Timeout = max(op.Root, 0), 10*time.Second
	b.Issue(op, done)
	return done
}

// runTimeout: rank 0 issues an all-reduce rank 1 never does.
func runTimeout(t *testing.T, b *Backend, ctx *cuda.Context, rank int) {
	if rank == 1 {
		return
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

// runChain: x = rank·1000+i, all-reduced, broadcast from rank 1,
// all-gathered into both halves of all, which is reduce-scattered back
// into x and then exchanged all-to-all; a buffer of 4 KiB cuts each into
// windows.
func runChain(t *testing.T, b *Backend, ctx *cuda.Context, rank int) {
	const n = 1500
	mem, err := ctx.Alloc(8 * 3 * n)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tensor.OnDevice(tensor.CUDA(0), mem, 0, tensor.Int64, n)
	all, _ := tensor.OnDevice(tensor.CUDA(0), mem, 8*n, tensor.Int64, 2*n)
	halves := []*tensor.Tensor{must(all.Narrow(0, n)), must(all.Narrow(n, n))}
	xs := []*tensor.Tensor{must(x.Narrow(0, n/2)), must(x.Narrow(n/2, n-n/2))}
	in := make([]int64, n)
	for i := range in {
		in[i] = int64(rank*1000 + i)
	}
	if err := ctx.CopyHtoD(mem, 0, tensor.FromSlice(in).Bytes()); err != nil {
		t.Fatal(err)
	}
	sum := reduce.New(reduce.Sum)
	ends := []ended{
		issue(b, &backend.Op{Name: backend.OpAllReduce, Kind: algorithms.AllReduce, DType: tensor.Int64, Reduce: sum,
			Counts: []int{n}, Inputs: []*tensor.Tensor{x}, Outputs: []*tensor.Tensor{x}}),
		issue(b, &backend.Op{Name: backend.OpBroadcast, Kind: algorithms.Broadcast, DType: tensor.Int64, Root: 1,
			Counts: []int{n}, Outputs: []*tensor.Tensor{x}}),
		issue(b, &backend.Op{Name: backend.OpAllGather, Kind: algorithms.AllGather, DType: tensor.Int64,
			Counts: []int{n, n}, Inputs: []*tensor.Tensor{x}, Outputs: halves}),
		issue(b, &backend.Op{Name: backend.OpReduceScatter, Kind: algorithms.ReduceScatter, DType: tensor.Int64, Reduce: sum,
			Counts: []int{n, n}, Inputs: halves, Outputs: []*tensor.Tensor{x}}),
		issue(b, &backend.Op{Name: backend.OpAllToAll, Kind: algorithms.AllToAll, DType: tensor.Int64,
			Send: []int{n / 2, n - n/2}, Recv: []int{n / 2, n - n/2}, Inputs: xs,
			Outputs: []*tensor.Tensor{must(all.Narrow(0, n/2)), must(all.Narrow(n/2, n-n/2))}}),
	}
	for i, e := range ends {
		if err := <-e; err != nil {
			t.Fatalf("operation %d of the chain: %v", i, err)
		}
	}
	got := make([]int64, 3*n)
	if err := ctx.CopyDtoH(tensor.FromSlice(got).Bytes(), mem, 0); err != nil {
		t.Fatal(err)
	}
	// The all-reduce gives 1000+2i; the all-gather puts it in both
	// halves; their reduce-scatter doubles it: v(i). The all-to-all gives
	// rank r every rank's block r of x, the same on both.
	v := func(i int) int64 { return int64(2 * (1000 + 2*i)) }
	for i := range n {
		if got[i] != v(i) {
			t.Fatalf("rank %d: x[%d] is %d, want %d", rank, i, got[i], v(i))
		}
		if want := v(rank*n/2 + i%(n/2)); got[n+i] != want {
			t.Fatalf("rank %d: all[%d] is %d, want %d", rank, i, got[n+i], want)
		}
	}
}

func must(t *tensor.Tensor, err error) *tensor.Tensor {
	if err != nil {
		panic(err)
	}
	return t
}

// joinGroup exchanges the two ranks' records, one hex line each way.
func joinGroup(t *testing.T, ctx *cuda.Context, rank int, in *bufio.Reader, out io.Writer) *DeviceGroup {
	t.Helper()
	g, rec, err := NewDeviceGroup(ctx, rank, 2, 4<<10)
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
