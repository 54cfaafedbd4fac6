package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/bench"
	"github.com/gocomms/gocomms/tensor"
)

const benchUsage = "usage: commnode bench [-local N] [--backend native|nccl] [-device D] [-b MIN] [-e MAX] [-f F] [--op OP] [--dtype T] [--redop R] [--root R] [-n N] [-w N] [-c 0|1] [--json] [--algo A|all] [--alpha D] [--overhead D] [--link-gbps G] [-timeout D] [-heartbeat D] [-silence D] [-v] [-comm NAME] [-cpuprofile FILE]"

// benchCommand runs `commnode bench`, nccl-tests for gocomms: as one rank
// of a job, or as -local N in-process ranks. Rank 0 prints the table (or
// JSON lines). It exits 0 if every op ran and every checked element was
// right, 1 otherwise, 2 on a usage error.
func benchCommand(args []string, stdout, stderr io.Writer) int {
	if driver, worker := ftWantsIt(args); driver || worker {
		return benchFT(args, worker, stdout, stderr)
	}
	a, code, ok := parseBenchArgs(args, stderr)
	if !ok {
		return code
	}
	stopProfile, err := startCPUProfile(a.cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "commnode bench: -cpuprofile: %v\n", err)
		return 1
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := newProgressLine(stderr, a.job.verbose)
	wrong, err := runRanks(ctx, a.local, &a.job, stderr, a.cfg.ValidateRanks, a.rank(stdout, progress))
	return exitCode(stderr, "bench", benchUsage, err, wrong, "elements")
}

// benchArgs is what `commnode bench` was asked for: the job, the
// benchmark's configuration, and the flags that become it once checked.
type benchArgs struct {
	job        jobFlags
	cfg        bench.Config
	op         string
	dtype      string
	redop      string
	check      int
	jsonOut    bool
	alpha      time.Duration
	overhead   time.Duration
	linkGBps   float64
	local      int
	cpuProfile string
}

// parseBenchArgs parses and checks args; not ok, the command exits with
// code.
func parseBenchArgs(args []string, stderr io.Writer) (a *benchArgs, code int, ok bool) {
	a = &benchArgs{cfg: bench.DefaultConfig()}
	fs := commandFlags("bench", benchUsage, stderr)
	a.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if err := a.settle(fs.Args()); err != nil {
		fmt.Fprintf(stderr, "commnode bench: %v\n%s\n", err, benchUsage)
		return nil, 2, false
	}
	return a, 0, true
}

func (a *benchArgs) register(fs *flag.FlagSet) {
	cfg := &a.cfg
	a.job.register(fs)
	a.job.registerBackend(fs)
	fs.Var(bytesFlag{&cfg.MinBytes}, "b", "smallest size in `bytes`; suffix K, M or G for powers of 1024")
	fs.Var(bytesFlag{&cfg.MaxBytes}, "e", "largest size in `bytes`; suffix K, M or G for powers of 1024")
	fs.Int64Var(&cfg.Factor, "f", cfg.Factor, "multiplication factor between sizes")
	fs.StringVar(&a.op, "op", "all_reduce", "collective: all_reduce, reduce, broadcast, all_gather, reduce_scatter, all_to_all, gather, scatter, barrier, send_recv, or all")
	fs.StringVar(&a.dtype, "dtype", cfg.DType.String(), "element type: any gocomms dtype name")
	fs.StringVar(&a.redop, "redop", "sum", "reduction: sum, prod, min, max, avg, band, bor, bxor")
	fs.IntVar(&cfg.Root, "root", cfg.Root, "root rank of reduce, broadcast, gather and scatter")
	fs.IntVar(&cfg.Iters, "n", cfg.Iters, "timed iterations per size")
	fs.IntVar(&cfg.Warmup, "w", cfg.Warmup, "warm-up iterations per size")
	fs.BoolVar(&cfg.Registered, "R", false, "allocate the buffers with Comm.Alloc, registered with the communicator: peers of this host read them in place")
	fs.BoolVar(&cfg.Blocking, "z", false, "wait for each op before issuing the next, as blocking calls do (default: issue all, then wait)")
	fs.IntVar(&a.check, "c", 1, "check results: 1 counts wrong elements after the timed loop, 0 skips it")
	fs.BoolVar(&a.jsonOut, "json", false, "print one JSON object per size instead of the table")
	fs.StringVar(&cfg.Algorithm, "algo", "", "algorithm hint for the ops that have it, or all: each schedule in turn, and the fastest per size (default: gocomms chooses)")
	fs.DurationVar(&a.alpha, "alpha", 15*time.Microsecond, "with --algo all: the model's latency per message, for each schedule's estimate (defaults: fitted to processes over loopback TCP, docs/ALGORITHMS.md)")
	fs.DurationVar(&a.overhead, "overhead", 80*time.Microsecond, "with --algo all: the model's sender time per message")
	fs.Float64Var(&a.linkGBps, "link-gbps", 1.0, "with --algo all: the model's bandwidth per port in GB/s; 0 estimates nothing")
	fs.IntVar(&a.local, "local", 0, "run N ranks in this process instead of joining a job")
	fs.StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of this process to `file` (one file per process: add the rank, as in prof.$RANK)")
	fs.Bool("ft", false, "run a training loop in worker processes under a fault plan instead (Linux; see commnode bench --ft -h)")
}

// settle turns the flags into a.cfg and checks it; rest is what the
// flags left.
func (a *benchArgs) settle(rest []string) error {
	cfg := &a.cfg
	var errs []error
	var err error
	if cfg.Ops, err = bench.ParseOps(a.op); err != nil {
		errs = append(errs, err)
	}
	if cfg.DType, err = tensor.ParseDType(a.dtype); err != nil {
		errs = append(errs, fmt.Errorf("unknown dtype %q", a.dtype))
	}
	if cfg.RedOp, err = bench.ParseRedOp(a.redop); err != nil {
		errs = append(errs, err)
	}
	if a.check != 0 && a.check != 1 {
		errs = append(errs, errors.New("-c must be 0 or 1"))
	}
	cfg.Check = a.check == 1
	if a.alpha < 0 || a.overhead < 0 || a.linkGBps < 0 {
		errs = append(errs, errors.New("--alpha, --overhead and --link-gbps must not be negative"))
	}
	cfg.Model = algorithms.Model{Alpha: a.alpha.Seconds(), Overhead: a.overhead.Seconds(), BytesPerSecond: a.linkGBps * 1e9}
	if a.local < 0 {
		errs = append(errs, errors.New("-local must not be negative"))
	}
	if err := a.job.checkBackend(a.local > 0); err != nil {
		errs = append(errs, err)
	}
	cfg.Unsupported = a.job.unsupported()
	if len(rest) > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", rest))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if a.local > 0 {
		return cfg.ValidateRanks(a.local)
	}
	return nil
}

// rank returns what each rank runs: the benchmark, whose results rank 0
// writes to stdout as a table or JSON lines.
func (a *benchArgs) rank(stdout io.Writer, progress *progressLine) func(context.Context, *gocomms.Comm) (int64, error) {
	cfg := a.cfg
	return func(ctx context.Context, c *gocomms.Comm) (int64, error) {
		rcfg := cfg
		report := func(bench.Result) error { return nil }
		finish := func() error { return nil }
		if c.Rank() == 0 {
			rcfg.Progress = progress.step
			add := func(r bench.Result) error { return bench.WriteJSON(stdout, r) }
			if !a.jsonOut {
				t := bench.NewTable(stdout, bench.Header{Version: bench.Version(), Host: hostname(), Ranks: c.Size(), Config: cfg})
				add, finish = t.Add, t.Close
			}
			report = func(r bench.Result) error {
				progress.clear()
				return add(r)
			}
			defer progress.clear()
		}
		w, err := bench.Run(ctx, c, rcfg, report)
		if err != nil {
			return 0, err
		}
		if err := finish(); err != nil {
			return 0, err
		}
		if c.Rank() == 0 && !a.jsonOut {
			printPaths(stdout, c, "# ")
		}
		return w, nil
	}
}

// runRanks runs rank on local in-process ranks, or, with local 0, as this
// process's rank of the launcher's job (validate checks the job's size).
// A rank whose run fails aborts the communicator, so that the others stop
// waiting on it, unless its call was invalid: the ranks that meet a
// mismatch learn of it themselves, and those that wait on a rank that
// finalizes hear how many collectives it ran, where an abort would read
// to them as a failure. It returns rank 0's wrong count, the same on every rank,
// and the job's error.
func runRanks(ctx context.Context, local int, job *jobFlags, stderr io.Writer, validate func(int) error,
	rank func(ctx context.Context, c *gocomms.Comm) (wrong int64, err error)) (int64, error) {
	var wrong int64
	run := func(ctx context.Context, c *gocomms.Comm) error {
		w, err := rank(ctx, c)
		if err != nil {
			if !errors.Is(err, gocomms.ErrInvalidArgument) {
				c.Abort(err)
			}
			return err
		}
		if c.Rank() == 0 {
			wrong = w
		}
		return nil
	}
	var err error
	if local > 0 {
		dev, derr := job.dev(true)
		if derr != nil {
			return 0, derr
		}
		defer dumpFlightRecordsOnSignal(stderr)()
		err = gocomms.RunLocalOn(ctx, local, dev, run,
			gocomms.WithTimeout(job.timeout), gocomms.WithLogger(job.logger(stderr)))
	} else {
		err = joinAndRun(ctx, job, stderr, validate, run)
	}
	return wrong, err
}

// exitCode is `commnode cmd`'s exit status for a run that ended with err
// and wrong counts of what was checked (elements, or bytes or values): 2,
// with the usage, for a configuration that does not fit the job; 1 for an
// error or anything wrong; else 0.
func exitCode(stderr io.Writer, cmd, usage string, err error, wrong int64, what string) int {
	var bad badRanks
	switch {
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "commnode %s: %v\n%s\n", cmd, bad.err, usage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "commnode %s: %v\n", cmd, err)
		return 1
	case wrong > 0:
		fmt.Fprintf(stderr, "commnode %s: %d wrong %s\n", cmd, wrong, what)
		return 1
	}
	return 0
}

// ftWantsIt reports whether bench's arguments ask for --ft or
// --ft-worker, and which.
func ftWantsIt(args []string) (driver, worker bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || hasVal && val != "true" && val != "1" {
			continue
		}
		switch name {
		case "ft":
			driver = true
		case "ft-worker":
			worker = true
		}
	}
	return driver, worker
}

// badRanks is a configuration that does not fit the job it joined.
type badRanks struct{ err error }

func (b badRanks) Error() string { return b.err.Error() }

// joinAndRun joins the launcher's job as one rank, checks that the job
// fits, runs fn on it and finalizes the communicator.
func joinAndRun(ctx context.Context, job *jobFlags, stderr io.Writer, fits func(ranks int) error, fn func(context.Context, *gocomms.Comm) error) error {
	c, err := job.join(ctx, stderr)
	if err != nil {
		return err
	}
	defer dumpFlightRecordsOnSignal(stderr)()
	if err = fits(c.Size()); err != nil {
		err = badRanks{err}
	} else {
		err = fn(ctx, c)
	}
	// Finalize even when ctx was cancelled, so that peers see this rank
	// leave; the timeout bounds it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), job.timeout)
	defer cancel()
	if ferr := c.Finalize(fctx); err == nil {
		err = ferr
	}
	return err
}

// runLocalRanks runs n ranks in this process, rank on each. Rank 0 writes
// to stdout and stderr as it goes, the others to buffers of their own,
// printed in rank order once all are done. It
// returns the exit status: 1, with the error after cmd's name, when the
// run fails, 1 when a rank saw something wrong, else 0.
func runLocalRanks(ctx context.Context, n int, job *jobFlags, stdout, stderr io.Writer, cmd string,
	rank func(ctx context.Context, c *gocomms.Comm, stdout, stderr io.Writer) (ok bool, err error)) int {
	outs, errs := make([]bytes.Buffer, n), make([]bytes.Buffer, n)
	oks := make([]bool, n)
	dev, err := job.dev(true)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	stop := dumpFlightRecordsOnSignal(stderr)
	err = gocomms.RunLocalOn(ctx, n, dev, func(ctx context.Context, c *gocomms.Comm) error {
		r := c.Rank()
		var out, errOut io.Writer = &outs[r], &errs[r]
		if r == 0 {
			out, errOut = stdout, stderr
		}
		var err error
		oks[r], err = rank(ctx, c, out, errOut)
		return err
	}, gocomms.WithTimeout(job.timeout), gocomms.WithLogger(job.logger(stderr)), gocomms.WithFailureDetector(job.heartbeat, localSilence(job.silence)))
	stop() // before the ranks' buffered output, which a dump would interleave with
	for r := 1; r < n; r++ {
		stdout.Write(outs[r].Bytes())
		stderr.Write(errs[r].Bytes())
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	if slices.Contains(oks, false) {
		return 1
	}
	return 0
}

// localSilence is the silence that fails an in-process rank's peer: off
// unless -silence sets it. Ranks of one process share its CPUs, and
// hundreds of them on a few cores leave one quiet for seconds while it
// waits its turn; nothing between them can be lost, and -timeout still
// bounds a rank that hangs.
func localSilence(silence time.Duration) time.Duration {
	if silence == 0 {
		return -1
	}
	return silence
}

// bytesFlag is a size flag in nccl-tests' syntax.
type bytesFlag struct{ v *int64 }

func (f bytesFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f bytesFlag) Set(s string) error {
	n, err := bench.ParseBytes(s)
	if err == nil {
		*f.v = n
	}
	return err
}

// progressLine shows which size a sweep is running on stderr: one line
// redrawn in place on a terminal, a line per size with -v, nothing
// otherwise (a log file wants rows, not progress).
type progressLine struct {
	w       io.Writer
	term    bool
	verbose bool
	shown   bool // a redrawn line is on the terminal
}

func newProgressLine(w io.Writer, verbose bool) *progressLine {
	f, ok := w.(*os.File)
	return &progressLine{w: w, term: ok && isTerminal(f), verbose: verbose}
}

func (p *progressLine) step(s bench.Step) {
	p.show(fmt.Sprintf("commnode bench: [%d/%d] %v %s", s.Index, s.Total, s.Op, humanBytes(s.Bytes)))
}

// show redraws the line with msg on a terminal, or with -v writes it,
// timed, on a line of its own.
func (p *progressLine) show(msg string) {
	switch {
	case p.term:
		fmt.Fprintf(p.w, "\r\033[K%s", msg)
		p.shown = true
	case p.verbose:
		fmt.Fprintf(p.w, "%s  %s\n", time.Now().Format(time.TimeOnly), msg)
	}
}

// clear erases the redrawn line before rows reach the same terminal.
func (p *progressLine) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func humanBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
