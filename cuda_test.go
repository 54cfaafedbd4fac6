package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/engine"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/gpu/cuda/fakecuda"
	"github.com/gocomms/gocomms/tensor"
)

// inFakeCUDA runs the tests matching pattern in a child of this test
// binary that loads the fake CUDA driver (package fakecuda) with one
// device, which the child's ranks share, with env besides, and fails t if
// they fail.
func inFakeCUDA(t *testing.T, pattern string, env ...string) {
	t.Helper()
	dir := fakecuda.BuildFor(t)
	cmd := exec.Command(os.Args[0], "-test.run=^"+pattern+"$", "-test.v", "-test.count=1", "-test.timeout=300s")
	cmd.Env = append(append(os.Environ(), fakecuda.Env(dir, 1, 20000, true)...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+pattern) {
		t.Fatalf("%s against the fake driver: %v\n%s", pattern, err, out)
	}
	if strings.Contains(string(out), "fakecuda: leak") {
		t.Errorf("%s left device objects live:\n%s", pattern, out)
	}
	t.Logf("%s against the fake driver:\n%s", pattern, out)
}

// needCUDA skips t unless the process has a GPU to use: the fake
// driver's child, or a real one where GOCOMMS_CUDA_REQUIRE is set.
func needCUDA(t *testing.T) {
	t.Helper()
	if os.Getenv("GOCOMMS_CUDA_REQUIRE") == "" {
		t.Skip("skip: runs in a child with a CUDA driver (GOCOMMS_CUDA_REQUIRE=1)")
	}
	if _, err := cuda.Shared(0); err != nil {
		t.Fatal(err)
	}
}

func TestCUDACollectives(t *testing.T) { inFakeCUDA(t, "TestCUDASweep") }

// TestCUDASweep checks every collective and point-to-point form, every
// dtype and op, on tensors of one GPU that 1 to 4 ranks of this process
// share, against commtest's reference.
func TestCUDASweep(t *testing.T) {
	needCUDA(t)
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			plan := commtest.Plan{Counts: []int{0, 1, n - 1, n + 1, 1000}}
			err := gocomms.RunLocalOn(context.Background(), n, gocomms.CUDA(0), func(ctx context.Context, c *gocomms.Comm) error {
				rep, err := commtest.Sweep(ctx, c, plan)
				if err != nil {
					return err
				}
				if len(rep.Results) == 0 {
					return errors.New("the sweep ran no case")
				}
				return rep.Err()
			}, gocomms.WithTimeout(60*time.Second))
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCUDAStreams(t *testing.T) { inFakeCUDA(t, "TestCUDAStreamOrder") }

// TestCUDAStreamOrder checks torchcomms' stream semantics: an operation
// issued on a caller's stream reads what that stream wrote before it, and
// a stream made to wait for its Work reads the result.
func TestCUDAStreamOrder(t *testing.T) {
	needCUDA(t)
	const n, count = 3, 4096
	err := gocomms.RunLocalOn(context.Background(), n, gocomms.CUDA(0), func(ctx context.Context, c *gocomms.Comm) error {
		dev, err := cuda.Shared(0)
		if err != nil {
			return err
		}
		s, err := dev.NewStream()
		if err != nil {
			return err
		}
		defer s.Close()
		x, err := c.Alloc(tensor.Float32, count)
		if err != nil {
			return err
		}
		defer c.Free(x)
		pin, err := dev.AllocHost(4 * count)
		if err != nil {
			return err
		}
		defer pin.Close()
		in := tensor.FromSlice(make([]float32, count))
		for i := range count {
			in.SetFloat64(i, float64(c.Rank()+i))
		}
		copy(pin.Bytes(), in.Bytes())
		mem, _ := x.Memory()
		// The upload is only queued: the all-reduce must come after it.
		if err := s.CopyHtoD(mem.(*cuda.DeviceMemory), 0, pin.Bytes()); err != nil {
			return err
		}
		w := c.AllReduceAsync(x, gocomms.Sum, gocomms.OnStream(s))
		if err := w.WaitStream(ctx, s); err != nil {
			return err
		}
		if err := s.CopyDtoH(pin.Bytes(), mem.(*cuda.DeviceMemory), 0); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		if err := w.Wait(ctx); err != nil {
			return err
		}
		got := tensor.FromSlice(make([]float32, count))
		copy(got.Bytes(), pin.Bytes())
		for i := range count {
			if want := float64(n*(n-1)/2 + n*i); got.Float64At(i) != want {
				return fmt.Errorf("rank %d: element %d is %v, want %v", c.Rank(), i, got.Float64At(i), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCUDASplits(t *testing.T) { inFakeCUDA(t, "TestCUDASplitComms") }

// TestCUDASplitComms splits a GPU communicator, whose exchange of the
// groups moves host bytes through device tensors, and reduces in each
// part.
func TestCUDASplitComms(t *testing.T) {
	needCUDA(t)
	const n = 5
	err := gocomms.RunLocalOn(context.Background(), n, gocomms.CUDA(0), func(ctx context.Context, c *gocomms.Comm) error {
		sub, err := c.SplitByColor(ctx, c.Rank()%2, c.Rank())
		if err != nil {
			return err
		}
		defer sub.Finalize(ctx)
		if sub.Device() != gocomms.CUDA(0) {
			return fmt.Errorf("the split is on %v", sub.Device())
		}
		x, err := sub.Alloc(tensor.Int64, 3)
		if err != nil {
			return err
		}
		defer sub.Free(x)
		dev, err := cuda.Shared(0)
		if err != nil {
			return err
		}
		mem, _ := x.Memory()
		in := tensor.FromSlice([]int64{int64(c.Rank()), 1, 2})
		if err := dev.CopyHtoD(mem.(*cuda.DeviceMemory), 0, in.Bytes()); err != nil {
			return err
		}
		if err := sub.AllReduce(ctx, x, gocomms.Sum); err != nil {
			return err
		}
		got := tensor.FromSlice(make([]int64, 3))
		if err := dev.CopyDtoH(got.Bytes(), mem.(*cuda.DeviceMemory), 0); err != nil {
			return err
		}
		want, size := int64(0), 0
		for r := c.Rank() % 2; r < n; r += 2 {
			want += int64(r)
			size++
		}
		if g, _ := tensor.As[int64](got); g[0] != want || g[1] != int64(size) || g[2] != int64(2*size) {
			return fmt.Errorf("rank %d: %v after the split's all-reduce, want [%d %d %d]", c.Rank(), g, want, size, 2*size)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCUDAChains runs the chain with operations staged whole, and cut
// into pieces of 1 KiB that pipeline.
func TestCUDAChains(t *testing.T) {
	for _, chunk := range []string{"0", "1024"} {
		t.Run("chunk="+chunk, func(t *testing.T) {
			inFakeCUDA(t, "TestCUDAAsyncChain", engine.StageChunkVar+"="+chunk)
		})
	}
}

// TestCUDAAsyncChain issues operations that read each other's results
// back to back, waiting only at the end: each must see the one before.
func TestCUDAAsyncChain(t *testing.T) {
	needCUDA(t)
	const n, count = 3, 1000
	err := gocomms.RunLocalOn(context.Background(), n, gocomms.CUDA(0), func(ctx context.Context, c *gocomms.Comm) error {
		dev, err := cuda.Shared(0)
		if err != nil {
			return err
		}
		x, err := c.Alloc(tensor.Int64, count)
		if err != nil {
			return err
		}
		defer c.Free(x)
		all, err := c.Alloc(tensor.Int64, n*count)
		if err != nil {
			return err
		}
		defer c.Free(all)
		in := make([]int64, count)
		for i := range in {
			in[i] = int64(c.Rank()*count + i)
		}
		mem, _ := x.Memory()
		if err := dev.CopyHtoD(mem.(*cuda.DeviceMemory), 0, tensor.FromSlice(in).Bytes()); err != nil {
			return err
		}
		works := []*gocomms.Work{
			c.AllReduceAsync(x, gocomms.Sum),   // x[i] = Σr (r·count+i)
			c.BroadcastAsync(x, 1),             // unchanged: every rank holds it
			c.AllReduceAsync(x, gocomms.Max),   // unchanged
			c.AllGatherSingleAsync(all, x),     // n copies
			c.AllReduceAsync(all, gocomms.Sum), // n times each
		}
		for _, w := range works {
			if err := w.Wait(ctx); err != nil {
				return err
			}
		}
		got := make([]int64, n*count)
		amem, _ := all.Memory()
		if err := dev.CopyDtoH(tensor.FromSlice(got).Bytes(), amem.(*cuda.DeviceMemory), 0); err != nil {
			return err
		}
		for j, g := range got {
			i := j % count
			if want := int64(n * (count*n*(n-1)/2 + n*i)); g != want {
				return fmt.Errorf("rank %d: element %d is %d, want %d", c.Rank(), j, g, want)
			}
		}
		cut := c.UnsafeBackend().(interface{ StagedPieces() uint64 }).StagedPieces()
		if pipelined := os.Getenv(engine.StageChunkVar) != "0"; pipelined != (cut > 0) {
			return fmt.Errorf("rank %d: %d pieces with %s=%s", c.Rank(), cut, engine.StageChunkVar, os.Getenv(engine.StageChunkVar))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCUDADriverCalls counts, on the fake driver, the driver calls one
// all-reduce of 256 MiB costs each of 2 ranks of one process, on the
// staged path such ranks take: the host work of an operation. It bounds
// it, so that it cannot grow unseen; docs/GPU.md records it. The device
// group's count, for ranks that are processes of one host, is
// test/calls_test.go's.
func TestCUDADriverCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: 256 MiB a rank on the fake driver, in -short")
	}
	inFakeCUDA(t, "TestCUDAAllReduceCalls", fakecuda.CallsVar+"="+filepath.Join(t.TempDir(), "calls"))
}

// callsPerAllReduce bounds TestCUDADriverCalls's count: 256 today, 4 for
// each 4 MiB piece (a copy each way, each followed by an event recorded),
// context sets and the waiting thread's queries apart.
const callsPerAllReduce = 300

func TestCUDAAllReduceCalls(t *testing.T) {
	needCUDA(t)
	const n, count = 2, 64 << 20 // float32: 256 MiB
	path := os.Getenv(fakecuda.CallsVar)
	if path == "" {
		t.Skip("skip: runs in TestCUDADriverCalls's child, which counts driver calls")
	}
	var ready, measured sync.WaitGroup
	ready.Add(n)
	measured.Add(n)
	var before, after fakecuda.Count
	err := gocomms.RunLocalOn(context.Background(), n, gocomms.CUDA(0), func(ctx context.Context, c *gocomms.Comm) error {
		x, err := c.Alloc(tensor.Float32, count)
		if err != nil {
			return err
		}
		defer c.Free(x)
		if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil { // connected, buffers made
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		ready.Done()
		ready.Wait()
		if c.Rank() == 0 {
			if before, err = fakecuda.Calls(path); err != nil {
				return err
			}
		}
		if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
			return err
		}
		measured.Done()
		measured.Wait()
		if c.Rank() == 0 {
			if after, err = fakecuda.Calls(path); err != nil {
				return err
			}
		}
		return nil
	}, gocomms.WithTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	per := d.Calls / n
	t.Logf("driver calls per all-reduce of 256 MiB, per rank of %d: %d, and %d context sets, %d queries while waiting",
		n, per, d.ContextSets/n, d.Queries/n)
	if per == 0 || per > callsPerAllReduce {
		t.Errorf("%d driver calls per all-reduce of 256 MiB a rank; want 1 to %d", per, callsPerAllReduce)
	}
}
