package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
)

const verifyUsage = "usage: commnode verify [-local N] [-counts C,C,...] [-full] [-R] [-timeout D] [-heartbeat D] [-silence D] [-comm NAME] [-v]"

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
	local := fs.Int("local", 0, "run N in-process ranks instead of joining a job as one rank")
	countsFlag := fs.String("counts", "", "elements per rank, comma-separated (default 0,1,P-1,P+1,2P+1,1000 on P ranks)")
	full := fs.Bool("full", false, fmt.Sprintf("also sweep %v elements per rank (minutes, not seconds)", fullCounts))
	registered := fs.Bool("R", false, "take the tensors from Comm.Alloc: registered memory, which peers of this host read in place")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	counts, err := parseCounts(*countsFlag)
	var problem string
	switch {
	case err != nil:
		problem = err.Error()
	case fs.NArg() > 0:
		problem = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case *local < 0:
		problem = "-local must not be negative"
	case job.timeout <= 0:
		problem = "-timeout must be positive"
	}
	if problem != "" {
		fmt.Fprintf(stderr, "commnode verify: %s\n%s\n", problem, verifyUsage)
		return 2
	}
	v := verifier{counts: counts, full: *full, registered: *registered, verbose: job.verbose}
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
	counts     []int // nil: the default for the world size
	full       bool
	registered bool
	verbose    bool
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
	return commtest.Plan{Counts: slices.Compact(counts), Registered: v.registered}
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

// verify sweeps c, prints the wrong results this rank saw, and learns from
// the other ranks which cases were wrong anywhere, so that every rank
// prints the same table and reports the same outcome. An error means this
// rank could not take part to the end; its peers then fail too, when its
// links go or their wait times out.
func (v verifier) verify(ctx context.Context, c *gocomms.Comm, stdout, stderr io.Writer) (ok bool, err error) {
	plan := v.plan(c.Size())
	cases, err := plan.Cases()
	if err != nil {
		return false, err
	}
	rep, err := commtest.Sweep(ctx, c, plan)
	for _, m := range rep.Mismatches {
		fmt.Fprintln(stderr, "commnode verify:", m)
	}
	if err != nil {
		return false, err
	}
	wrong := make([]int32, len(cases)) // ranks that saw case i wrong
	for i, r := range rep.Results {
		if r.Wrong {
			wrong[i] = 1
		}
	}
	if err := commtest.AllReduceHost(ctx, c, gocomms.FromSlice(wrong), gocomms.Sum); err != nil {
		return false, fmt.Errorf("combining the ranks' results: %w", err)
	}
	all := commtest.Report{Results: make([]commtest.Result, len(cases))}
	for i, cs := range cases {
		// Its own results stand even if the all-reduce that combined them is what is broken.
		all.Results[i] = commtest.Result{Case: cs, Wrong: wrong[i] > 0 || rep.Results[i].Wrong}
	}
	if c.Rank() == 0 || v.verbose {
		printVerify(stdout, all, c.Size())
		printPaths(stdout, c)
	}
	return all.Wrong() == 0, nil
}

// printPaths says, on a GPU, how many operations ran from the device
// memory of the host's ranks and how many were staged through the host.
func printPaths(w io.Writer, c *gocomms.Comm) {
	if d, ok := c.UnsafeBackend().(interface {
		GroupOps() uint64
		StagedOps() uint64
	}); ok {
		fmt.Fprintf(w, "verify: on %v, %d operations ran from device memory of this host's ranks, %d were staged through host memory\n",
			c.Device(), d.GroupOps(), d.StagedOps())
	}
}

func printVerify(w io.Writer, all commtest.Report, size int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "collective\tcases\twrong\t\n")
	for _, t := range all.Tally() {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", t.Collective, t.Cases, t.Wrong)
	}
	tw.Flush()
	if wrong := all.Wrong(); wrong > 0 {
		fmt.Fprintf(w, "verify: %d of %d cases WRONG\n", wrong, len(all.Results))
		return
	}
	fmt.Fprintf(w, "verify: %d cases on %d ranks, all correct\n", len(all.Results), size)
}
