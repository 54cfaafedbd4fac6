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
	"github.com/gocomms/gocomms/internal/ccompiler"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/tcpstore"
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
	cudaDir := fakecuda.BuildFor(t)
	dir := t.TempDir()
	buildFake(t, dir)
	env := fakecuda.Env(cudaDir, 4, 2000, false) // a device for each of up to 4 ranks
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
	cc, err := ccompiler.Find()
	if err != nil {
		t.Skipf("skip: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "testdata", "fakenccl.c")
	build := exec.Command(cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
		"-o", filepath.Join(dir, LibraryName), src, "-lpthread", "-ldl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, out)
	}
}

// The environment of a process that runs one rank of a TestDevice test:
// NCCL refuses two ranks of a communicator on one GPU, so each rank runs
// in a process of its own, on its own device.
const (
	rankEnv  = "GOCOMMS_NCCL_TEST_RANK"  // "r/n": rank r of n
	storeEnv = "GOCOMMS_NCCL_TEST_STORE" // the address of the ranks' tcpstore
)

// rank returns the rank and size this process runs, if it runs one.
func rank() (r, n int, ok bool) {
	_, err := fmt.Sscanf(os.Getenv(rankEnv), "%d/%d", &r, &n)
	return r, n, err == nil
}

// device skips the test unless it runs as TestFake's child or was asked
// to. In a rank's process it returns the shared context of the rank's
// device, cuda:r; elsewhere, nil.
func device(t *testing.T) *cuda.Context {
	t.Helper()
	if os.Getenv(childEnv) == "" {
		t.Skipf("skip: runs in TestFake's child, or with %s=1 where NCCL and GPUs are", childEnv)
	}
	r, _, ok := rank()
	if !ok {
		return nil
	}
	cu, err := cuda.Shared(r)
	if err != nil {
		t.Fatal(err)
	}
	return cu
}

// needGPUs skips the test where there are fewer than n GPUs, one for each
// rank.
func needGPUs(t *testing.T, n int) {
	t.Helper()
	drv, err := cuda.Open()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := drv.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < n {
		t.Skipf("skip: %d ranks need %d GPUs, not %d: NCCL refuses two ranks of a communicator on one GPU "+
			"(ncclInvalidUsage: Duplicate GPU detected)", n, n, len(devs))
	}
}

// spawn runs fn as each of n ranks, each in a process of its own that
// runs this test again, sharing a tcpstore served here. In a rank's
// process it runs fn for that rank, where the size is n.
func spawn(t *testing.T, n int, fn func(ctx context.Context, r int, st store.Store)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r, size, ok := rank(); ok {
		if size != n {
			return
		}
		st, err := tcpstore.Dial(ctx, os.Getenv(storeEnv))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		// The hub of rank 0's communicators lives in its process, so no
		// rank leaves before every rank is done.
		defer func() {
			keys := make([]string, n)
			for q := range keys {
				keys[q] = fmt.Sprintf("done/%d", q)
			}
			if err := errors.Join(st.Set(ctx, keys[r], nil), st.Wait(ctx, keys...)); err != nil {
				t.Errorf("rank %d: waiting for the others to finish: %v", r, err)
			}
		}()
		fn(ctx, r, st)
		return
	}
	srv, err := tcpstore.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	outs, errs := make([][]byte, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", rankEnv, r, n), storeEnv+"="+srv.Addr().String())
			outs[r], errs[r] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for r := range n {
		if errs[r] != nil || !strings.Contains(string(outs[r]), "--- PASS: "+t.Name()) {
			t.Errorf("rank %d of %d: %v\n%s", r, n, errs[r], outs[r])
		}
	}
}

// ranks runs fn on each of n ranks of a communicator, rank r on cuda:r in
// a process of its own (spawn), then finalizes them.
func ranks(t *testing.T, n int, fn func(ctx context.Context, r int, c *gocomms.Comm), opts ...gocomms.Option) {
	t.Helper()
	needGPUs(t, n)
	spawn(t, n, func(ctx context.Context, r int, st store.Store) {
		all := append([]gocomms.Option{gocomms.WithRank(r), gocomms.WithSize(n), gocomms.WithStore(st),
			gocomms.WithTimeout(30 * time.Second)}, opts...)
		c, err := gocomms.NewComm(ctx, Name, tensor.CUDA(r), fmt.Sprintf("%s/%d", t.Name(), n), all...)
		if err != nil {
			t.Fatal(err)
		}
		fn(ctx, r, c)
		// Finalize reports the operations that failed, which tests of
		// failures expect.
		if err := c.Finalize(ctx); err != nil && !c.IsAborted() && !strings.Contains(err.Error(), "operations failed") {
			t.Errorf("rank %d: finalize: %v", r, err)
		}
	})
}

// upload returns a tensor on cu's device holding vals.
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
	d, err := tensor.OnDevice(tensor.CUDA(cu.Device().Ordinal()), m, 0, dt, len(vals))
	if err != nil {
		t.Error(err)
	}
	return d
}

// download returns the values of a tensor on cu's device.
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

// views cuts a tensor on cu's device holding the concatenation of blocks into
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
