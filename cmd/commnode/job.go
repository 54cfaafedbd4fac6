package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// newLogger logs to w through tint when w is a terminal, as plain text
// otherwise; debug with verbose, warnings only without.
func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return slog.New(tint.NewHandler(w, &tint.Options{Level: level}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// jobFlags are the flags of every command that joins a job as one rank.
type jobFlags struct {
	timeout   time.Duration // per operation
	heartbeat time.Duration
	silence   time.Duration
	verbose   bool
	name      string
	device    string
	// http is where to serve metrics and health (--http); stuckAfter
	// is when /readyz calls an operation in flight stuck.
	http       string
	stuckAfter time.Duration
}

func (j *jobFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&j.timeout, "timeout", time.Minute, "per-operation timeout")
	fs.DurationVar(&j.heartbeat, "heartbeat", 0, "ask a peer this rank waits on for a frame after this long without one (default 1s)")
	fs.DurationVar(&j.silence, "silence", 0, "a peer this rank waits on that stays silent this long has failed (default 5s; negative: never)")
	fs.BoolVar(&j.verbose, "v", false, "log debug events to stderr")
	fs.StringVar(&j.name, "comm", "commnode", "communicator name")
	fs.StringVar(&j.device, "device", "cpu", `where tensors live: cpu, cuda (this rank's GPU: its local rank modulo the GPUs) or cuda:N`)
	fs.StringVar(&j.http, "http", os.Getenv("GOCOMMS_HTTP_ADDR"), "serve /metrics, /healthz, /readyz, /debug/flight and /debug/pprof/ at host:port, the port plus this rank's local rank (0: a free port; default $GOCOMMS_HTTP_ADDR)")
	fs.DurationVar(&j.stuckAfter, "stuck-after", gocomms.DefaultStuckAfter, "with -http, /readyz reports an operation in flight this long")
}

// dev is the device -device names; in-process ranks share cuda's GPU 0.
func (j *jobFlags) dev(local bool) (gocomms.Device, error) {
	if j.device == "cuda" && !local {
		return gocomms.LocalCUDA()
	}
	return tensor.ParseDevice(j.device)
}

// join creates this process's communicator from the launcher's environment
// (torchrun, mpirun, srun or commnode launch).
func (j *jobFlags) join(ctx context.Context, stderr io.Writer) (*gocomms.Comm, error) {
	logger := newLogger(stderr, j.verbose)
	start := time.Now()
	dev, err := j.dev(false)
	if err != nil {
		return nil, err
	}
	opts := []gocomms.Option{gocomms.WithTimeout(j.timeout), gocomms.WithLogger(logger), gocomms.WithFailureDetector(j.heartbeat, j.silence)}
	var reg *prometheus.Registry
	if j.http != "" {
		reg = newRegistry()
		opts = append(opts, gocomms.WithMetrics(reg))
	}
	c, err := gocomms.NewComm(ctx, gocomms.NativeBackend, dev, j.name, opts...)
	if err != nil {
		return nil, err
	}
	logger.Debug("joined the job", "rank", c.Rank(), "size", c.Size(), "took", time.Since(start))
	if reg != nil {
		if err := j.serveHTTP(c, reg, stderr); err != nil {
			c.Abort(err)
			return nil, err
		}
	}
	return c, nil
}
