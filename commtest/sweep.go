package commtest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// Case is one collective call, all that a rank needs to run or replay it.
type Case struct {
	Collective string // "all_reduce", ..., "send_recv", "batch"
	DType      gocomms.DType
	Op         gocomms.ReduceOp // the zero ReduceOp for collectives that do not reduce
	Count      int              // elements per rank (per block, per peer)
	Seed       int              // generates every rank's input, and picks the root
}

// String reads "all_reduce int32 sum count=7 seed=12".
func (cs Case) String() string {
	op := ""
	if cs.Op != (gocomms.ReduceOp{}) {
		op = " " + cs.Op.String()
	}
	return fmt.Sprintf("%s %v%s count=%d seed=%d", cs.Collective, cs.DType, op, cs.Count, cs.Seed)
}

// Mismatch is a wrong element in one rank's result.
type Mismatch struct {
	Rank  int
	Case  Case
	Where string // the buffer that held it: "output", "outputs[2]", "block from rank 1", ...
	Index int    // element index within Where
	Got   string
	Want  string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("rank %d: %v: %s element %d = %s, want %s", m.Rank, m.Case, m.Where, m.Index, m.Got, m.Want)
}

// DefaultKeep is how many wrong results a Report keeps in detail when the
// Plan does not say.
const DefaultKeep = 10

// Plan says what Sweep runs: every collective × dtype × valid op × count.
type Plan struct {
	DTypes []gocomms.DType // nil: every dtype
	Counts []int           // elements per rank; at least one, none negative
	// Collectives names those to run, from Collectives(); nil: every
	// one. Their cases keep the seeds they have in the whole plan.
	Collectives []string
	Seed        int // the first case's seed is Seed+1
	Keep        int // wrong results a Report keeps in detail; 0: DefaultKeep
	// Registered takes the tensors from Comm.Alloc (Checker.Registered).
	Registered bool
	// Progress, if set, hears each case's result on this rank as the
	// sweep goes.
	Progress func(Result)
	// Unsupported, if set, is the error with which the communicator's
	// backend declines a case it has no counterpart for
	// (nccl.ErrUnsupported): such a case is a Result marked Unsupported,
	// and the sweep goes on, as every rank declines it alike before
	// anything moves.
	Unsupported error
}

// Collectives names every collective a plan runs, in the order All runs
// them.
func Collectives() []string {
	names := make([]string, len(collectives))
	for i, col := range collectives {
		names[i] = col.name
	}
	return names
}

// Cases lists what Sweep runs, in order: for each dtype, for each count,
// the cases of Checker.All. It is the same on every rank.
func (p Plan) Cases() ([]Case, error) {
	invalid := func(format string, args ...any) ([]Case, error) {
		return nil, fmt.Errorf("commtest: plan: %s: %w", fmt.Sprintf(format, args...), gocomms.ErrInvalidArgument)
	}
	if len(p.Counts) == 0 {
		return invalid("no counts")
	}
	if p.Keep < 0 {
		return invalid("Keep %d is negative", p.Keep)
	}
	for _, name := range p.Collectives {
		if !slices.Contains(Collectives(), name) {
			return invalid("unknown collective %q", name)
		}
	}
	dtypes := p.DTypes
	if dtypes == nil {
		dtypes = tensor.DTypes()
	}
	var cs []Case
	for _, dt := range dtypes {
		if !dt.Valid() {
			return invalid("invalid dtype %v", dt)
		}
		for _, n := range p.Counts {
			if n < 0 {
				return invalid("negative count %d", n)
			}
			seed := p.Seed + len(cs)
			cs = appendCases(cs, dt, n, seed)
		}
	}
	if p.Collectives != nil {
		cs = slices.DeleteFunc(cs, func(c Case) bool { return !slices.Contains(p.Collectives, c.Collective) })
	}
	return cs, nil
}

// Result is one case's outcome on one rank.
type Result struct {
	Case
	Wrong       bool
	Unsupported bool // the backend declined it (Plan.Unsupported)
}

// Report is what one rank saw in a sweep.
type Report struct {
	Results    []Result    // one per case run, in Plan.Cases order
	Mismatches []*Mismatch // the first wrong results, in order
}

// Wrong counts the wrong results.
func (r Report) Wrong() int {
	n := 0
	for _, res := range r.Results {
		if res.Wrong {
			n++
		}
	}
	return n
}

// Tally is the outcome of one collective's cases.
type Tally struct {
	Collective   string
	Cases, Wrong int
}

// Tally counts cases and wrong results per collective, in the order All
// runs the collectives.
func (r Report) Tally() []Tally {
	var ts []Tally
	for _, col := range collectives {
		t := Tally{Collective: col.name}
		for _, res := range r.Results {
			if res.Collective == col.name {
				t.Cases++
				if res.Wrong {
					t.Wrong++
				}
			}
		}
		if t.Cases > 0 {
			ts = append(ts, t)
		}
	}
	return ts
}

// Err returns nil if every result was right, or an error that counts the
// wrong ones and joins the Mismatches kept.
func (r Report) Err() error {
	wrong := r.Wrong()
	if wrong == 0 {
		return nil
	}
	errs := make([]error, len(r.Mismatches))
	for i, m := range r.Mismatches {
		errs[i] = m
	}
	return fmt.Errorf("%d of %d cases wrong; the first:\n%w", wrong, len(r.Results), errors.Join(errs...))
}

// Sweep runs p's cases on c and checks each result. Every rank of c must
// call it with the same plan. Wrong results are counted in the Report and
// the sweep goes on; a collective that fails ends it, with the Report so
// far and the error, because the ranks may no longer be in step.
func Sweep(ctx context.Context, c *gocomms.Comm, p Plan) (Report, error) {
	cases, err := p.Cases()
	if err != nil {
		return Report{}, err
	}
	keep := p.Keep
	if keep == 0 {
		keep = DefaultKeep
	}
	ck := Checker{Comm: c, Registered: p.Registered}
	rep := Report{Results: make([]Result, 0, len(cases))}
	for _, cs := range cases {
		err := ck.Run(ctx, cs)
		var m *Mismatch
		declined := p.Unsupported != nil && errors.Is(err, p.Unsupported)
		if err != nil && !errors.As(err, &m) && !declined {
			return rep, err
		}
		rep.Results = append(rep.Results, Result{Case: cs, Wrong: m != nil, Unsupported: declined})
		if p.Progress != nil {
			p.Progress(rep.Results[len(rep.Results)-1])
		}
		if m != nil && len(rep.Mismatches) < keep {
			rep.Mismatches = append(rep.Mismatches, m)
		}
	}
	return rep, nil
}
