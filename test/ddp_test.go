package test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildDDP builds examples/ddp for the test.
func buildDDP(t *testing.T) string {
	t.Helper()
	ddp := filepath.Join(t.TempDir(), "ddp")
	if out, err := exec.Command("go", "build", "-o", ddp, "github.com/gocomms/gocomms/examples/ddp").CombinedOutput(); err != nil {
		t.Fatalf("building examples/ddp: %v\n%s", err, out)
	}
	return ddp
}

// checkDDP checks what examples/ddp printed on 2 ranks: it trained, every
// rank ended with the same model, and it reported the overlap it got.
func checkDDP(t *testing.T, out []byte) {
	t.Helper()
	for _, want := range []string{"2 ranks: loss", "the same model on every rank", "all-reduces overlapped with backward"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// ddpArgs keep the example's runs short.
var ddpArgs = []string{"-layers", "4", "-width", "32", "-steps", "10"}

// TestDDPUnderLaunch runs examples/ddp as real processes under commnode
// launch, one rank each over shared memory, as a user runs it.
func TestDDPUnderLaunch(t *testing.T) {
	ddp := buildDDP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, commnode, append([]string{"launch", "-n", "2", "--", ddp}, ddpArgs...)...)
	cmd.Env = append(cmd.Environ(), "GOCOMMS_TRANSPORT=shm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("commnode launch -n 2 -- ddp: %v\n%s", err, out)
	}
	checkDDP(t, out)
}

// TestDDPUnderTorchrun runs examples/ddp under PyTorch's torchrun, as a
// job that mixes Go and Python workers would start it.
func TestDDPUnderTorchrun(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import torch.distributed.run").Run(); err != nil {
		t.Skipf("PyTorch's torchrun is not installed for %s (apt-get install python3-torch): %v", debianPython, err)
	}
	ddp := buildDDP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
		"--master_addr", "127.0.0.1", "--master_port", strconv.Itoa(freePort(t)),
		"--redirects", "1", "--tee", "1", "--no_python", ddp}, ddpArgs...)
	out, err := exec.CommandContext(ctx, debianPython, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("torchrun: %v\n%s", err, out)
	}
	checkDDP(t, out)
}
