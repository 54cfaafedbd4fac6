package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/launch"
)

const demoUsage = "usage: commnode demo [-ranks N] [--backend native|nccl] [-timeout D]"

// demoCommand runs `commnode demo`: it launches local processes, one rank
// each, that rendezvous over a TCPStore, check every collective (verify)
// and time all-reduce (bench) through shared memory (GOCOMMS_TRANSPORT
// chooses), or with --backend nccl through NCCL, a GPU each.
func demoCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("demo", demoUsage, stderr)
	ranks := fs.Int("ranks", 4, "local processes to start")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on each step")
	job := jobFlags{device: "cuda"} // the device of nccl's ranks
	job.registerBackend(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := job.checkBackend(false); err != nil {
		fmt.Fprintf(stderr, "commnode demo: %v\n%s\n", err, demoUsage)
		return 2
	}
	if *ranks < 1 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, demoUsage)
		return 2
	}
	for _, step := range demoSteps(job.backend) {
		fmt.Fprintf(stdout, "$ commnode launch -n %d -- commnode %s\n", *ranks, strings.Join(step, " "))
		job := launch.Job{
			N:       *ranks,
			Command: append([]string{"self"}, step...),
			Timeout: *timeout,
			Stdout:  stdout,
			Stderr:  stderr,
		}
		if _, err := job.Run(context.Background()); err != nil {
			fmt.Fprintf(stderr, "commnode demo: %s on %d ranks: %v\n", step[0], *ranks, err)
			return 1
		}
	}
	return 0
}

// demoSteps are the commands each rank of the demo runs in turn, on
// backend: the native one's ranks on the CPU, the others' on their GPU.
func demoSteps(backend string) [][]string {
	on := []string{"--backend", backend}
	if backend != gocomms.NativeBackend {
		on = append(on, "-device", "cuda")
	}
	return [][]string{
		append([]string{"verify", "-timeout", "30s"}, on...),
		append([]string{"bench", "-b", "8", "-e", "4M", "-f", "8", "-n", "100", "-w", "20", "-timeout", "30s"}, on...),
	}
}
