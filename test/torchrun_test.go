package test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// debianPython is Debian's own interpreter, the one python3-torch is
// installed for (another python3 may come first on PATH).
const debianPython = "/usr/bin/python3"

// TestTorchrunLaunchesCommnode has PyTorch's torchrun start commnode
// verify: its agent hosts the TCPStore (TORCHELASTIC_USE_AGENT_STORE), and
// every rank rendezvouses through it as a client.
func TestTorchrunLaunchesCommnode(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import torch.distributed.run").Run(); err != nil {
		t.Skipf("PyTorch's torchrun is not installed for %s (apt-get install python3-torch): %v", debianPython, err)
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d_ranks", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// Python 3.11 needs --redirects and --tee with this torchrun.
			cmd := exec.CommandContext(ctx, debianPython, "-m", "torch.distributed.run",
				"--nnodes", "1", "--nproc_per_node", strconv.Itoa(n),
				"--master_addr", "127.0.0.1", "--master_port", strconv.Itoa(freePort(t)),
				"--redirects", "1", "--tee", "1", "--no_python",
				commnode, "verify", "-timeout", "30s")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("torchrun: %v\n%s", err, out)
			}
			if !regexp.MustCompile(fmt.Sprintf(`verify: \d+ cases on %d ranks, all correct`, n)).Match(out) {
				t.Fatalf("no verdict from rank 0:\n%s", out)
			}
		})
	}
}
