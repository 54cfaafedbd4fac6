package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gocomms/gocomms/cmd/commnode/internal/launch"
)

const launchUsage = "usage: commnode launch -n N [-master-addr A] [-master-port P] [-timeout D] [-grace D] [--] CMD [ARGS...]"

// launchCommand runs `commnode launch`: N local ranks of CMD, torchrun
// style. It exits 0 if every rank exited 0, 1 if the job failed or was
// stopped, 2 on a usage error.
func launchCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("launch", launchUsage, stderr)
	n := fs.Int("n", 0, "ranks (local processes) to start")
	addr := fs.String("master-addr", launch.DefaultMasterAddr, "MASTER_ADDR given to every rank")
	port := fs.Int("master-port", 0, "MASTER_PORT given to every rank (0: a free port)")
	timeout := fs.Duration("timeout", 0, "bound on the whole job (0: none)")
	grace := fs.Duration("grace", launch.DefaultGrace, "time between SIGTERM and SIGKILL when stopping ranks")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	var problem string
	switch {
	case *n < 1:
		problem = "-n must be at least 1"
	case fs.NArg() == 0:
		problem = "no command to launch"
	case *port < 0 || *port > 65535:
		problem = "-master-port must be in [0, 65535]"
	case *timeout < 0:
		problem = "-timeout must not be negative"
	case *grace <= 0:
		problem = "-grace must be positive"
	}
	if problem != "" {
		fmt.Fprintf(stderr, "commnode launch: %s\n%s\n", problem, launchUsage)
		return 2
	}

	// The ranks lead their own process groups, so a terminal's Ctrl-C
	// reaches only the launcher; it passes the signal on.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	relay := make(chan os.Signal, 1)
	if r := relayedSignals(); len(r) > 0 {
		signal.Notify(relay, r...)
		defer signal.Stop(relay)
	}
	job := launch.Job{
		N:          *n,
		Command:    fs.Args(),
		MasterAddr: *addr,
		MasterPort: *port,
		Grace:      *grace,
		Timeout:    *timeout,
		Stdout:     stdout,
		Stderr:     stderr,
		Signals:    sigs,
		Relay:      relay,
	}
	res, err := job.Run(context.Background())
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "commnode launch:", err)
	for r, s := range res.Ranks {
		if r == res.FirstFailed || s == (launch.Status{}) {
			continue
		}
		how := ""
		if s.Stopped {
			how = " (stopped by the launcher)"
		}
		fmt.Fprintf(stderr, "commnode launch: rank %d: %v%s\n", r, s, how)
	}
	return 1
}
