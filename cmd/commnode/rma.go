package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/bench"
	"github.com/gocomms/gocomms/cmd/commnode/internal/rma"
)

const rmaUsage = `usage: commnode rma [-local N] [--op LIST] [-b MIN] [-e MAX] [-f F] [-n N] [-w N] [-V BYTES] [-W BYTES] [-c 0|1] [--json] [common flags]
       commnode rma --verify [-local N] [-counts C,C,...] [-n N] [-adds N] [common flags]
common flags: [-timeout D] [-heartbeat D] [-silence D] [-v] [-comm NAME]`

// The flags of each mode; a flag of the other mode is a usage error.
var (
	rmaBenchFlags  = []string{"op", "b", "e", "f", "w", "V", "W", "c", "json"}
	rmaVerifyFlags = []string{"counts", "adds"}
)

// rmaCommand runs `commnode rma`: one-sided operations through RMA windows,
// timed as bench/peers/mpi_rma.c times Open MPI's (rank 0 on rank 1's
// window), or with --verify checked across the job's ranks (torchcomms'
// WindowRmaTest ring and the atomics). It joins the job as one rank, or
// runs -local N ranks in this process. It exits 0 if everything ran and
// nothing was wrong, 1 otherwise, 2 on a usage error.
func rmaCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("rma", rmaUsage, stderr)
	a := rmaArgs{cfg: rma.DefaultConfig()}
	a.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "commnode rma: %v\n%s\n", err, rmaUsage)
		return 2
	}
	set := flagsSet(fs)
	errs := a.commonErrors(set, fs.Args())
	if a.verify {
		v, verifyErrs := a.verifier(set)
		if errs = append(errs, verifyErrs...); len(errs) > 0 {
			return usage(errors.Join(errs...))
		}
		return v.run(a.local, &a.job, stdout, stderr)
	}
	if errs = append(errs, a.settleBench(set)...); len(errs) > 0 {
		return usage(errors.Join(errs...))
	}
	return rmaBench(a.cfg, a.local, a.jsonOut, &a.job, stdout, stderr)
}

// rmaArgs is what `commnode rma` was asked for: the job, the bench's
// configuration, and the flags that become it, or the verifier, once
// checked.
type rmaArgs struct {
	job     jobFlags
	cfg     rma.Config
	verify  bool
	local   int
	op      string
	iters   int
	check   int
	jsonOut bool
	counts  string
	adds    int
}

func (a *rmaArgs) register(fs *flag.FlagSet) {
	cfg := &a.cfg
	a.job.register(fs)
	fs.BoolVar(&a.verify, "verify", false, "check windows across the ranks instead of timing them: the ring of torchcomms' WindowRmaTest and the atomics")
	fs.IntVar(&a.local, "local", 0, "run N ranks in this process instead of joining a job")
	fs.StringVar(&a.op, "op", "all", "ops, comma-separated, from "+rmaOpNames()+", or all")
	fs.Var(bytesFlag{&cfg.MinBytes}, "b", "smallest size of put and get in `bytes`; suffix K, M or G for powers of 1024")
	fs.Var(bytesFlag{&cfg.MaxBytes}, "e", "largest size in `bytes`")
	fs.Int64Var(&cfg.Factor, "f", cfg.Factor, "multiplication factor between sizes")
	fs.IntVar(&a.iters, "n", 0, fmt.Sprintf("timed ops per size (default %d); with --verify, iterations of the ring (default %d)", cfg.Iters, rma.RingIters))
	fs.IntVar(&cfg.Warmup, "w", cfg.Warmup, "warm-up ops per size")
	fs.Var(bytesFlag{&cfg.Volume}, "V", "cut the timed ops to `bytes`/size where they would move more (mpi_rma.c's -V); 0: never")
	fs.Var(bytesFlag{&cfg.Window}, "W", "window size in `bytes`, at least -e (default -e)")
	fs.IntVar(&a.check, "c", 1, "check what each size moved: 1 counts wrong bytes and values after the timed ops, 0 skips it")
	fs.BoolVar(&a.jsonOut, "json", false, "print one JSON object per row instead of the lines")
	fs.StringVar(&a.counts, "counts", "", "with --verify, elements per rank's block, comma-separated (default 4,1024,1048576)")
	fs.IntVar(&a.adds, "adds", 100, "with --verify, atomic increments of rank 0's counters per rank and atomic")
}

// commonErrors lists what is wrong with the flags that both modes check:
// set names the flags given, rest is what the flags left.
func (a *rmaArgs) commonErrors(set map[string]bool, rest []string) []error {
	var errs []error
	wrongMode, mode := rmaBenchFlags, "--verify"
	if !a.verify {
		wrongMode, mode = rmaVerifyFlags, "the bench (without --verify)"
	}
	for _, name := range wrongMode {
		if set[name] {
			errs = append(errs, fmt.Errorf("-%s does not apply to %s", name, mode))
		}
	}
	if a.local < 0 {
		errs = append(errs, errors.New("-local must not be negative"))
	}
	if a.job.timeout <= 0 {
		errs = append(errs, errors.New("-timeout must be positive"))
	}
	if set["n"] && a.iters < 1 {
		errs = append(errs, errors.New("-n must be at least 1"))
	}
	if len(rest) > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", rest))
	}
	return errs
}

// verifier is the check --verify asks for, and what is wrong with its
// flags; set names the flags given.
func (a *rmaArgs) verifier(set map[string]bool) (ringVerifier, []error) {
	var errs []error
	v := ringVerifier{counts: rma.RingCounts, iters: rma.RingIters, adds: a.adds, verbose: a.job.verbose}
	if set["n"] {
		v.iters = a.iters
	}
	if counts, err := parseCounts(a.counts); err != nil {
		errs = append(errs, err)
	} else if slices.Contains(counts, 0) {
		errs = append(errs, errors.New("-counts: a block needs at least one element"))
	} else if counts != nil {
		v.counts = counts
	}
	if a.adds < 1 {
		errs = append(errs, errors.New("-adds must be at least 1"))
	}
	return v, errs
}

// settleBench turns the bench's flags into a.cfg, and lists what is wrong
// with them; set names the flags given.
func (a *rmaArgs) settleBench(set map[string]bool) []error {
	var errs []error
	cfg := &a.cfg
	if set["n"] {
		cfg.Iters = a.iters
	}
	var err error
	if cfg.Ops, err = rma.ParseOps(a.op); err != nil {
		errs = append(errs, err)
	}
	if a.check != 0 && a.check != 1 {
		errs = append(errs, errors.New("-c must be 0 or 1"))
	}
	cfg.Check = a.check == 1
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if a.local > 0 {
		if err := cfg.ValidateRanks(a.local); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// rmaBench runs the bench; rank 0 prints the rows.
func rmaBench(cfg rma.Config, local int, jsonOut bool, job *jobFlags, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rank := func(ctx context.Context, c *gocomms.Comm) (int64, error) {
		rcfg := cfg
		report := func(rma.Result) error { return nil }
		if c.Rank() == 0 {
			report = func(r rma.Result) error { return rma.WriteLine(stdout, r) }
			if jsonOut {
				report = func(r rma.Result) error { return rma.WriteJSON(stdout, r) }
			} else {
				rcfg.Started = func(access gocomms.AccessType) error {
					return rma.WriteHeader(stdout, rma.Header{
						Version: bench.Version(), Host: hostname(), Ranks: c.Size(),
						Transport: transportName(local), Access: access.String(), Config: cfg,
					})
				}
			}
		}
		return rma.Run(ctx, c, rcfg, report)
	}
	wrong, err := runRanks(ctx, local, job, stderr, cfg.ValidateRanks, rank)
	return exitCode(stderr, "rma", rmaUsage, err, wrong, "bytes or values")
}

// hostname is this machine's name, or "(unknown)".
func hostname() string {
	host, err := os.Hostname()
	if err != nil {
		return "(unknown)"
	}
	return host
}

// transportName says what carries the ranks' frames: in-process queues
// for -local, else GOCOMMS_TRANSPORT's choice.
func transportName(local int) string {
	if local > 0 {
		return "in-process"
	}
	if t := os.Getenv("GOCOMMS_TRANSPORT"); t != "" {
		return t
	}
	return "auto"
}

// ringVerifier is `commnode rma --verify`.
type ringVerifier struct {
	counts  []int
	iters   int
	adds    int
	verbose bool
}

// rmaCase is one row of the verification's table: a ring or an atomic,
// and the wrong elements or values over every rank.
type rmaCase struct {
	check, dtype string
	count, iters int
	wrong        int64
}

func (v ringVerifier) run(local int, job *jobFlags, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if local == 0 {
		var ok bool
		err := joinAndRun(ctx, job, stderr, func(int) error { return nil }, func(ctx context.Context, c *gocomms.Comm) error {
			var err error
			ok, err = v.verifyOrAbort(ctx, c, transportName(0), stdout, stderr)
			return err
		})
		if err != nil {
			fmt.Fprintln(stderr, "commnode rma:", err)
			return 1
		}
		if !ok {
			return 1
		}
		return 0
	}
	return runLocalRanks(ctx, local, job, stdout, stderr, "commnode rma",
		func(ctx context.Context, c *gocomms.Comm, stdout, stderr io.Writer) (bool, error) {
			return v.verifyOrAbort(ctx, c, transportName(local), stdout, stderr)
		})
}

// verifyOrAbort is verify that aborts c when it fails, so that the other
// ranks stop waiting on this one.
func (v ringVerifier) verifyOrAbort(ctx context.Context, c *gocomms.Comm, transport string, stdout, stderr io.Writer) (bool, error) {
	ok, err := v.verify(ctx, c, transport, stdout, stderr)
	if err != nil {
		c.Abort(err)
	}
	return ok, err
}

// verify runs every ring case and the atomics on c. Each rank prints what
// it saw wrong to stderr; Ring and Atomics sum the wrong counts over the
// ranks in each case, so that every rank reports the same outcome, and
// rank 0 (or every rank, with -v) prints the table.
func (v ringVerifier) verify(ctx context.Context, c *gocomms.Comm, transport string, stdout, stderr io.Writer) (ok bool, err error) {
	var cases []rmaCase
	for _, count := range v.counts {
		for _, dt := range rma.RingDTypes {
			wrong, err := rma.Ring(ctx, c, dt, count, v.iters, func(m rma.Mismatch) {
				fmt.Fprintln(stderr, "commnode rma:", m)
			})
			if err != nil {
				return false, fmt.Errorf("ring %v × %d: %w", dt, count, err)
			}
			cases = append(cases, rmaCase{"ring", dt.String(), count, v.iters, wrong})
		}
	}
	checks, err := rma.Atomics(ctx, c, v.adds, func(s string) { fmt.Fprintln(stderr, "commnode rma:", s) })
	if err != nil {
		return false, fmt.Errorf("atomics: %w", err)
	}
	for _, ch := range checks {
		cases = append(cases, rmaCase{ch.Op.String(), gocomms.Int64.String(), 1, ch.Ops, ch.Wrong})
	}
	bad := 0
	for _, cs := range cases {
		if cs.wrong > 0 {
			bad++
		}
	}
	if c.Rank() == 0 || v.verbose {
		fmt.Fprintf(stdout, "# gocomms rma --verify: gocomms %s, %d ranks, rank 0 on host %s, transport %s\n",
			bench.Version(), c.Size(), hostname(), transport)
		fmt.Fprintf(stdout, "# ring: torchcomms' WindowRmaTest, each rank's block put into the next rank's window; atomics: every rank's increments of rank 0's counters\n")
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "check\tdtype\tcount\titers\twrong\t\n")
		for _, cs := range cases {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t\n", cs.check, cs.dtype, cs.count, cs.iters, cs.wrong)
		}
		tw.Flush()
		if bad > 0 {
			fmt.Fprintf(stdout, "rma verify: %d of %d cases WRONG on %d ranks\n", bad, len(cases), c.Size())
		} else {
			fmt.Fprintf(stdout, "rma verify: %d cases on %d ranks, all correct\n", len(cases), c.Size())
		}
	}
	return bad == 0, nil
}

// rmaOpNames lists the bench's ops, for the usage text.
func rmaOpNames() string {
	names := make([]string, len(rma.Ops))
	for i, o := range rma.Ops {
		names[i] = o.String()
	}
	return strings.Join(names, ", ")
}
