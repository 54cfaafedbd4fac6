package nccl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/gpu/cuda/fakecuda"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/tensor"
)

// childEnv, set, lets the TestDevice tests run: TestFake sets it for the
// test binary it runs against the fakes; on a machine with a GPU and
// NCCL, setting it runs them against the real ones.
const childEnv = "GOCOMMS_NCCL_TEST"

func TestMissingLibrary(t *testing.T) {
	err := load("libnccl-absent.so.2")
	if err == nil || haveLoader && err.Error() != "libnccl-absent.so.2 not found" {
		t.Fatalf("load of a missing library: %v; want it to say what is missing", err)
	}
}

// TestNewCommWithoutNCCL checks NewComm's error where this process has no
// NCCL, as this machine may not.
func TestNewCommWithoutNCCL(t *testing.T) {
	if _, err := Locate(); os.Getenv(childEnv) != "" || err == nil {
		t.Skip("skip: NCCL loads here")
	}
	_, err := gocomms.NewComm(context.Background(), Name, tensor.CUDA(0), t.Name(), gocomms.WithRank(0), gocomms.WithSize(1))
	if !errors.Is(err, ErrUnavailable) || haveLoader && !strings.Contains(err.Error(), "looked in: "+loaderPath) {
		t.Fatalf("NewComm without NCCL: %v; want ErrUnavailable saying where it looked", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	ctx := context.Background()
	_, err := gocomms.NewComm(ctx, Name, tensor.CPU, t.Name(), gocomms.WithRank(0), gocomms.WithSize(1))
	if !errors.Is(err, commerr.ErrInvalidArgument) || !strings.Contains(err.Error(), "cuda") {
		t.Errorf("NewComm on the cpu: %v; want an invalid argument", err)
	}
	_, err = gocomms.NewComm(ctx, Name, tensor.CUDA(0), t.Name(), gocomms.WithRank(0), gocomms.WithSize(2))
	if !errors.Is(err, commerr.ErrInvalidArgument) || !strings.Contains(err.Error(), "store") {
		t.Errorf("NewComm of 2 ranks without a store: %v; want an invalid argument", err)
	}
}

// TestFake runs the TestDevice tests in a child test binary that loads
// package fakecuda's libcuda.so.1 and testdata/fakenccl.c's libnccl.so.2.
func TestFake(t *testing.T) {
	if !haveLoader {
		t.Skip("skip: this build cannot load NCCL at all (no cgo, or not Linux)")
	}
	cudaDir, err := fakecuda.Build()
	if errors.Is(err, fakecuda.ErrUnsupported) {
		t.Skipf("skip: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	buildFake(t, dir)
	env := fakecuda.Env(cudaDir, 1, 2000, false)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			env[i] = "LD_LIBRARY_PATH=" + dir + ":" + v
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDevice", "-test.v", "-test.count=1", "-test.timeout=300s")
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1", "GOCOMMS_FAKENCCL_TIMEOUT_MS=2000")...)
	out, err := cmd.CombinedOutput()
	t.Logf("TestDevice against fakecuda and fakenccl:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "--- PASS: TestDeviceAllReduce") {
		t.Fatal("the child skipped device tests")
	}
}

// buildFake builds testdata/fakenccl.c into dir/libnccl.so.2.
func buildFake(t *testing.T, dir string) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("skip: no C compiler (%s): %v", cc, err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "testdata", "fakenccl.c")
	build := exec.Command(cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
		"-o", filepath.Join(dir, LibraryName), src, "-lpthread", "-ldl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, out)
	}
}

// device returns the shared context of cuda:0, skipping the test unless
// it runs as TestFake's child or was asked to.
func device(t *testing.T) *cuda.Context {
	t.Helper()
	if os.Getenv(childEnv) == "" {
		t.Skipf("skip: runs in TestFake's child, or with %s=1 where NCCL and a GPU are", childEnv)
	}
	cu, err := cuda.Shared(0)
	if err != nil {
		t.Fatal(err)
	}
	return cu
}

// ranks runs fn on each of n ranks of a communicator on cuda:0, in
// goroutines of this process, then finalizes them.
func ranks(t *testing.T, n int, fn func(ctx context.Context, r int, c *gocomms.Comm), opts ...gocomms.Option) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := store.NewMemory()
	name := fmt.Sprintf("%s/%d", t.Name(), n)
	comms := make([]*gocomms.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			all := append([]gocomms.Option{gocomms.WithRank(r), gocomms.WithSize(n), gocomms.WithStore(st),
				gocomms.WithTimeout(30 * time.Second)}, opts...)
			comms[r], errs[r] = gocomms.NewComm(ctx, Name, tensor.CUDA(0), name, all...)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r, c := range comms {
		wg.Go(func() { fn(ctx, r, c) })
	}
	wg.Wait()
	for r, c := range comms {
		// Finalize reports the operations that failed, which tests of
		// failures expect.
		if err := c.Finalize(ctx); err != nil && !c.IsAborted() && !strings.Contains(err.Error(), "operations failed") {
			t.Errorf("rank %d: finalize: %v", r, err)
		}
	}
}

// upload returns a tensor on cuda:0 holding vals.
func upload(t *testing.T, cu *cuda.Context, dt tensor.DType, vals []float64) *tensor.Tensor {
	h, err := tensor.New(dt, len(vals))
	if err != nil {
		t.Error(err)
		return nil
	}
	for i, v := range vals {
		h.SetFloat64(i, v)
	}
	m, err := cu.Alloc(h.NBytes())
	if err == nil {
		err = cu.CopyHtoD(m, 0, h.Bytes())
	}
	if err != nil {
		t.Error(err)
		return nil
	}
	t.Cleanup(func() { _ = m.Close() })
	d, err := tensor.OnDevice(tensor.CUDA(0), m, 0, dt, len(vals))
	if err != nil {
		t.Error(err)
	}
	return d
}

// download returns the values of a tensor on cuda:0.
func download(t *testing.T, cu *cuda.Context, d *tensor.Tensor) []float64 {
	if d == nil {
		return nil
	}
	mem, off := d.Memory()
	b := make([]byte, d.NBytes())
	if err := cu.CopyDtoH(b, mem.(*cuda.DeviceMemory), off); err != nil {
		t.Error(err)
		return nil
	}
	h, err := tensor.FromBytes(d.DType(), b, d.Numel())
	if err != nil {
		t.Error(err)
		return nil
	}
	vals := make([]float64, d.Numel())
	for i := range vals {
		vals[i] = h.Float64At(i)
	}
	return vals
}

// views cuts a tensor on cuda:0 holding the concatenation of blocks into
// one view per block, back to back, as a collective's blocks may lie.
func views(t *testing.T, cu *cuda.Context, dt tensor.DType, blocks [][]float64) []*tensor.Tensor {
	var all []float64
	for _, b := range blocks {
		all = append(all, b...)
	}
	whole := upload(t, cu, dt, all)
	out := make([]*tensor.Tensor, len(blocks))
	off := 0
	for i, b := range blocks {
		v, err := whole.Narrow(off, len(b))
		if err != nil {
			t.Error(err)
		}
		out[i] = v
		off += len(b)
	}
	return out
}
