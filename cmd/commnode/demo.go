package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gocomms/gocomms/cmd/commnode/internal/launch"
)

// demoCommand runs `commnode demo`: it launches local processes, one rank
// each, that rendezvous over a TCPStore, check every collective (verify)
// and time all-reduce (bench) through shared memory (GOCOMMS_TRANSPORT
// chooses).
func demoCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("demo", "usage: commnode demo [-ranks N] [-timeout D]", stderr)
	ranks := fs.Int("ranks", 4, "local processes to start")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on each step")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *ranks < 1 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: commnode demo [-ranks N] [-timeout D]")
		return 2
	}
	steps := [][]string{
		{"verify", "-timeout", "30s"},
		{"bench", "-b", "8", "-e", "4M", "-f", "8", "-n", "100", "-w", "20", "-timeout", "30s"},
	}
	for _, step := range steps {
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
