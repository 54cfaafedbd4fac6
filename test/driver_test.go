package test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/gpu/cuda"
)

// TestCUDADriverWithoutGPU runs where the NVIDIA driver's libcuda.so.1 is
// installed on a machine without a GPU, as CI installs Debian's libcuda1.
// Open binds every entry point and reaches cuInit, which answers
// CUDA_ERROR_NO_DEVICE. NewComm on CUDA(0), commnode info, and verify
// -device cuda on each of two ranks then fail at once, naming that error,
// rather than wait for a peer or a timeout.
func TestCUDADriverWithoutGPU(t *testing.T) {
	const named = "CUDA_ERROR_NO_DEVICE"
	_, err := cuda.Open()
	switch {
	case err == nil:
		t.Skip("skip: a GPU is here; test/gpu/run.sh checks it")
	case errors.Is(err, cuda.ErrNoLibrary):
		t.Skipf("skip: the NVIDIA driver is not installed: %v", err)
	case !errors.Is(err, cuda.ErrNoDevice) || !strings.Contains(err.Error(), named):
		t.Fatalf("Open with the driver and no GPU: %v; want ErrNoDevice naming %s", err, named)
	}

	err = gocomms.RunLocalOn(context.Background(), 2, gocomms.CUDA(0), func(context.Context, *gocomms.Comm) error {
		return errors.New("a communicator was made on a GPU that is not there")
	})
	if !errors.Is(err, cuda.ErrNoDevice) || !strings.Contains(err.Error(), named) {
		t.Errorf("communicators on CUDA(0): %v; want ErrNoDevice naming %s", err, named)
	}

	out, err := exec.Command(commnode, "info").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cuda driver") || !strings.Contains(string(out), named) {
		t.Errorf("commnode info: %v; want a cuda driver line naming %s:\n%s", err, named, out)
	}

	// A minute's timeout: an error naming the driver's came before it.
	procs := startRanks(t, 2, []int{0, 1}, "verify", "-device", "cuda", "-timeout", "1m")
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			t.Fatalf("rank %d still runs verify on a GPU that is not there:\n%s", p.rank, p.stderr.String())
		}
		if p.err == nil || !strings.Contains(p.stderr.String(), named) {
			t.Errorf("rank %d: exit %v; want a failure naming %s:\n%s", p.rank, p.err, named, p.stderr.String())
		}
	}
}
