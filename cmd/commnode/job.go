package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/nccl"
	"github.com/gocomms/gocomms/tensor"
)

// logFlags say how a command logs: --log-level (warn by default, -v
// being --log-level debug) and --log-format.
type logFlags struct {
	level   slog.Level
	format  logFormat
	verbose bool // -v: debug, and each command's progress lines
}

func (l *logFlags) register(fs *flag.FlagSet, verboseUsage string) {
	fs.TextVar(&l.level, "log-level", slog.LevelWarn, "least level logged to stderr: debug, info, warn or error")
	fs.Var(&l.format, "log-format", "log records as text (coloured on a terminal) or json, one object a line")
	fs.BoolFunc("v", verboseUsage+" (--log-level debug)", func(v string) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		l.verbose = on
		if on {
			l.level = slog.LevelDebug
		}
		return nil
	})
}

// logger logs to w at the flags' level and in their format: JSON for
// collectors, else tint where w is a terminal, plain text otherwise.
func (l *logFlags) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.level}
	if l.format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return slog.New(tint.NewHandler(w, &tint.Options{Level: l.level}))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logFormat is --log-format's value: "text" (the default, as "") or "json".
type logFormat string

func (f *logFormat) String() string { return cmp.Or(string(*f), "text") }

func (f *logFormat) Set(v string) error {
	if v != "text" && v != "json" {
		return fmt.Errorf("want text or json, not %q", v)
	}
	*f = logFormat(v)
	return nil
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
	logFlags
	name    string
	device  string
	backend string // gocomms.NativeBackend unless the command takes --backend
	// http is where to serve metrics and health (--http); stuckAfter
	// is when /readyz calls an operation in flight stuck.
	http       string
	stuckAfter time.Duration
}

func (j *jobFlags) register(fs *flag.FlagSet) {
	j.backend = gocomms.NativeBackend
	fs.DurationVar(&j.timeout, "timeout", time.Minute, "per-operation timeout")
	fs.DurationVar(&j.heartbeat, "heartbeat", 0, "ask a peer this rank waits on for a frame after this long without one (default 1s)")
	fs.DurationVar(&j.silence, "silence", 0, "a peer this rank waits on that stays silent this long has failed (default 5s, and never with -local; negative: never)")
	j.logFlags.register(fs, "log debug events to stderr")
	fs.StringVar(&j.name, "comm", "commnode", "communicator name")
	fs.StringVar(&j.device, "device", "cpu", `where tensors live: cpu, cuda (this rank's GPU: its local rank modulo the GPUs) or cuda:N`)
	fs.StringVar(&j.http, "http", os.Getenv("GOCOMMS_HTTP_ADDR"), "serve /metrics, /healthz, /readyz, /debug/flight and /debug/pprof/ at host:port, the port plus this rank's local rank (0: a free port; default $GOCOMMS_HTTP_ADDR)")
	fs.DurationVar(&j.stuckAfter, "stuck-after", gocomms.DefaultStuckAfter, "with -http, /readyz reports an operation in flight this long")
}

// registerBackend adds --backend, for the commands that run on any
// backend; $GOCOMMS_BACKEND is its default.
func (j *jobFlags) registerBackend(fs *flag.FlagSet) {
	fs.StringVar(&j.backend, "backend", cmp.Or(os.Getenv("GOCOMMS_BACKEND"), gocomms.NativeBackend),
		"the communicator's backend: "+strings.Join(gocomms.Backends(), " or ")+" (nccl needs -device cuda; default $GOCOMMS_BACKEND, else native)")
}

// checkBackend says why --backend cannot run as asked: a name no backend
// has, or nccl on the CPU or with in-process ranks (local), which run on
// the native backend alone and share one GPU, where NCCL needs one per
// rank.
func (j *jobFlags) checkBackend(local bool) error {
	if !slices.Contains(gocomms.Backends(), j.backend) {
		return fmt.Errorf("unknown backend %q (known: %s)", j.backend, strings.Join(gocomms.Backends(), ", "))
	}
	if j.backend != nccl.Name {
		return nil
	}
	if dev, err := tensor.ParseDevice(j.device); err == nil && dev.Type != tensor.DeviceCUDA {
		return fmt.Errorf("--backend nccl runs on GPUs: give -device cuda (this rank's GPU) or cuda:N, not %s", j.device)
	}
	if local {
		return errors.New("--backend nccl runs one rank per process and GPU, not -local ranks; " +
			"start them with commnode launch -n N -- commnode ... --backend nccl -device cuda")
	}
	return nil
}

// unsupported is the error with which the backend declines an operation
// it has no counterpart for, which a sweep reports and passes over; nil
// where it runs every one.
func (j *jobFlags) unsupported() error {
	if j.backend == nccl.Name {
		return nccl.ErrUnsupported
	}
	return nil
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
	logger := j.logger(stderr)
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
	c, err := gocomms.NewComm(ctx, j.backend, dev, j.name, opts...)
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
