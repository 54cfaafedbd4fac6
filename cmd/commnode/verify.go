package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
)

const verifyUsage = "usage: commnode verify [-local N] [--backend native|nccl] [-device D] [-counts C,C,...] [-full] [-R] [-timeout D] [-heartbeat D] [-silence D] [-comm NAME] [-v]"

// fullCounts are what -full adds: 65537 elements pass one 512 KiB chunk
// even of float64, and 1<<20+1 span several chunks of every dtype.
var fullCounts = []int{65537, 1<<20 + 1}

// verifyCommand runs `commnode verify`: every collective × dtype × valid op
// × count on this job's communicator, or on -local N in-process ranks, each
// result checked against the commtest reference. Rank 0 prints a table;
// every rank exits 0 only if every rank saw every result right, 1
// otherwise, 2 on a usage error. Every rank must get the same flags.
func verifyCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("verify", verifyUsage, stderr)
	var job jobFlags
	job.register(fs)
	job.registerBackend(fs)
	local := fs.Int("local", 0, "run N in-process ranks instead of joining a job as one rank")
	countsFlag := fs.String("counts", "", "elements per rank, comma-separated (default 0,1,P-1,P+1,2P+1,1000 on P ranks)")
	full := fs.Bool("full", false, fmt.Sprintf("also sweep %v elements per rank (minutes, not seconds)", fullCounts))
	registered := fs.Bool("R", false, "take the tensors from Comm.Alloc: registered memory, which peers of this host read in place")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	counts, err := parseCounts(*countsFlag)
	berr := job.checkBackend(*local > 0)
	var problem string
	switch {
	case err != nil:
		problem = err.Error()
	case berr != nil:
		problem = berr.Error()
	case fs.NArg() > 0:
		problem = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case *local < 0 || *local == 0 && flagsSet(fs)["local"]:
		problem = "-local must be at least 1"
	case job.timeout <= 0:
		problem = "-timeout must be positive"
	}
	if problem != "" {
		fmt.Fprintf(stderr, "commnode verify: %s\n%s\n", problem, verifyUsage)
		return 2
	}
	v := verifier{counts: counts, full: *full, registered: *registered, verbose: job.verbose, unsupported: job.unsupported()}
	if *local > 0 {
		return v.runLocal(*local, &job, stdout, stderr)
	}
	return v.runJob(&job, stdout, stderr)
}

// parseCounts reads -counts; "" means the default, nil.
func parseCounts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var counts []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-counts: %q is not a count of elements", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

type verifier struct {
	counts      []int // nil: the default for the world size
	full        bool
	registered  bool
	verbose     bool
	unsupported error // the backend's error for what it declines (commtest.Plan.Unsupported)
}

func (v verifier) plan(size int) commtest.Plan {
	counts := slices.Clone(v.counts) // local ranks share v
	if counts == nil {
		counts = []int{0, 1, size - 1, size + 1, 2*size + 1, 1000}
	}
	if v.full {
		counts = append(counts, fullCounts...)
	}
	slices.Sort(counts)
	return commtest.Plan{Counts: slices.Compact(counts), Registered: v.registered, Unsupported: v.unsupported}
}

func (v verifier) runJob(job *jobFlags, stdout, stderr io.Writer) int {
	ctx := context.Background()
	c, err := job.join(ctx, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "commnode verify:", err)
		return 1
	}
	defer dumpFlightRecordsOnSignal(stderr)()
	ok, err := v.verify(ctx, c, stdout, stderr)
	if err == nil {
		err = c.Finalize(ctx)
	}
	if err != nil {
		fmt.Fprintln(stderr, "commnode verify:", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// runLocal runs the ranks in this process; each writes to buffers of its
// own, printed in rank order once all are done.
func (v verifier) runLocal(n int, job *jobFlags, stdout, stderr io.Writer) int {
	return runLocalRanks(context.Background(), n, job, stdout, stderr, "commnode verify",
		func(ctx context.Context, c *gocomms.Comm, stdout, stderr io.Writer) (bool, error) {
			return v.verify(ctx, c, stdout, stderr)
		})
}

// verify sweeps c one collective at a time, prints the wrong results
// this rank saw, and learns from the other ranks which cases were wrong
// anywhere, so that every rank prints the same table and reports the
// same outcome. Rank 0 (every rank, with -v) prints each collective's row
// as it completes, and on a terminal a line that says how far the sweep
// is. An error means this rank could not take part to the end; its peers
// then fail too, when its links go or their wait times out.
func (v verifier) verify(ctx context.Context, c *gocomms.Comm, stdout, stderr io.Writer) (ok bool, err error) {
	plan := v.plan(c.Size())
	cases, err := plan.Cases()
	if err != nil {
		return false, err
	}
	show := c.Rank() == 0 || v.verbose
	table := newVerifyTable(stdout, len(cases))
	progress := newProgressLine(stderr, false)
	if show {
		table.header()
		done, start := 0, time.Now()
		plan.Progress = func(r commtest.Result) {
			done++
			progress.show(fmt.Sprintf("commnode verify: [%d/%d] %s, %v", done, len(cases), r.Collective, time.Since(start).Round(time.Second)))
		}
	}
	wrongCases, ran := 0, 0
	var declined []string // a line per collective with cases the backend declined
	for _, name := range commtest.Collectives() {
		p := plan
		p.Collectives = []string{name}
		n, wrong, unsupported, err := v.verifyCollective(ctx, c, p, stderr)
		if err != nil {
			progress.clear()
			return false, err
		}
		if len(unsupported) > 0 {
			declined = append(declined, fmt.Sprintf("verify: %s: %d cases unsupported by the %s backend: %s",
				name, len(unsupported), c.Backend(), unsupportedNames(unsupported)))
		}
		if n == 0 {
			continue
		}
		wrongCases += wrong
		ran += n
		if show {
			progress.clear()
			table.row(name, n, wrong)
		}
	}
	if show {
		for _, line := range declined {
			fmt.Fprintln(stdout, line)
		}
		if wrongCases > 0 {
			fmt.Fprintf(stdout, "verify: %d of %d cases WRONG\n", wrongCases, ran)
		} else {
			fmt.Fprintf(stdout, "verify: %d cases on %d ranks, all correct\n", ran, c.Size())
		}
		printPaths(stdout, c, "verify: ")
	}
	return wrongCases == 0, nil
}

// unsupportedNames names the dtypes and reductions of cases, once each:
// "int16 (sum, prod), int32 (band)".
func unsupportedNames(cases []commtest.Case) string {
	var dtypes []gocomms.DType
	ops := map[gocomms.DType][]string{}
	for _, cs := range cases {
		if _, ok := ops[cs.DType]; !ok {
			dtypes = append(dtypes, cs.DType)
			ops[cs.DType] = nil
		}
		if op := cs.Op.String(); cs.Op != (gocomms.ReduceOp{}) && !slices.Contains(ops[cs.DType], op) {
			ops[cs.DType] = append(ops[cs.DType], op)
		}
	}
	names := make([]string, len(dtypes))
	for i, dt := range dtypes {
		names[i] = dt.String()
		if len(ops[dt]) > 0 {
			names[i] += " (" + strings.Join(ops[dt], ", ") + ")"
		}
	}
	return strings.Join(names, ", ")
}

// verifyCollective sweeps p, one collective's cases, and returns how
// many ran, how many were wrong on any rank, and those the backend
// declined, alike on every rank.
func (v verifier) verifyCollective(ctx context.Context, c *gocomms.Comm, p commtest.Plan, stderr io.Writer) (cases, wrong int, unsupported []commtest.Case, err error) {
	rep, err := commtest.Sweep(ctx, c, p)
	for _, m := range rep.Mismatches {
		fmt.Fprintln(stderr, "commnode verify:", m)
	}
	if err != nil {
		return 0, 0, nil, err
	}
	rep.Results = slices.DeleteFunc(rep.Results, func(r commtest.Result) bool {
		if r.Unsupported {
			unsupported = append(unsupported, r.Case)
		}
		return r.Unsupported
	})
	if len(rep.Results) == 0 {
		return 0, 0, unsupported, nil
	}
	wrongAt := make([]int32, len(rep.Results)) // ranks that saw case i wrong
	for i, r := range rep.Results {
		if r.Wrong {
			wrongAt[i] = 1
		}
	}
	if err := commtest.AllReduceHost(ctx, c, gocomms.FromSlice(wrongAt), gocomms.Sum); err != nil {
		return 0, 0, nil, fmt.Errorf("combining the ranks' results: %w", err)
	}
	for i, r := range rep.Results {
		// Its own results stand even if the all-reduce that combined them is what is broken.
		if wrongAt[i] > 0 || r.Wrong {
			wrong++
		}
	}
	return len(rep.Results), wrong, unsupported, nil
}

// printPaths says, on a GPU, how many operations ran from the device
// memory of the host's ranks and how many were staged through the host,
// on a line that starts with prefix.
func printPaths(w io.Writer, c *gocomms.Comm, prefix string) {
	if d, ok := c.UnsafeBackend().(interface {
		GroupOps() uint64
		StagedOps() uint64
	}); ok {
		fmt.Fprintf(w, "%son %v, %d operations ran from device memory of this host's ranks, %d were staged through host memory\n",
			prefix, c.Device(), d.GroupOps(), d.StagedOps())
	}
}

// verifyTable prints verify's table a row at a time, as each
// collective completes, its columns as wide as the longest name and the
// total of cases.
type verifyTable struct {
	w           io.Writer
	name, count int // column widths
}

func newVerifyTable(w io.Writer, cases int) *verifyTable {
	t := &verifyTable{w: w, name: len("collective"), count: max(len("cases"), len(strconv.Itoa(cases)))}
	for _, name := range commtest.Collectives() {
		t.name = max(t.name, len(name))
	}
	return t
}

func (t *verifyTable) header() {
	fmt.Fprintf(t.w, "%*s  %*s  %*s\n", t.name, "collective", t.count, "cases", t.count, "wrong")
}

func (t *verifyTable) row(name string, cases, wrong int) {
	fmt.Fprintf(t.w, "%*s  %*d  %*d\n", t.name, name, t.count, cases, t.count, wrong)
}
