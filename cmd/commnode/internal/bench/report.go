package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"slices"

	"github.com/gocomms/gocomms/algorithms"
)

// Result is one row: one op at one size.
type Result struct {
	Op     Op      `json:"op"`
	Ranks  int     `json:"ranks"`
	Bytes  int64   `json:"size"`    // per rank: the larger of its send and receive buffers
	Count  int64   `json:"count"`   // elements; one rank's block where the op splits the buffer
	DType  string  `json:"type"`    // "none" for barrier
	RedOp  string  `json:"redop"`   // "none" for ops that do not reduce
	Root   int     `json:"root"`    // -1 for ops without one
	TimeUS float64 `json:"time_us"` // per op, the largest over ranks
	// MedianUS is, with Blocking, the median time of one rank's ops, the
	// largest over ranks: TimeUS without the ops that waited on the
	// collector or on another process for the CPU.
	MedianUS float64 `json:"median_us,omitempty"`
	AlgBW    float64 `json:"algbw"` // GB/s (10^9 bytes): Bytes over time
	BusBW    float64 `json:"busbw"` // GB/s: AlgBW × Op.BusFactor(Ranks)
	Checked  bool    `json:"checked"`
	Wrong    int64   `json:"wrong"` // elements, summed over ranks; 0 when not checked
	// Algorithm is the schedule --algo asked for; empty where gocomms chose.
	Algorithm string `json:"algo,omitempty"`
	// EstimateUS is the schedule's time on Config.Model, with --algo all.
	EstimateUS float64 `json:"estimate_us,omitempty"`
	// Unsupported, on the one row of an op the backend declined
	// (Config.Unsupported), says why; the row has no measures.
	Unsupported string `json:"unsupported,omitempty"`
}

// WriteJSON writes r as one line of JSON.
func WriteJSON(w io.Writer, r Result) error { return json.NewEncoder(w).Encode(r) }

// Header is what a table says before its rows.
type Header struct {
	Version string // of gocomms
	Host    string // of rank 0
	Ranks   int
	Config  Config
}

// Table prints rows as nccl-tests does: its columns, widths and number
// formats, one table per op, and its closing lines.
type Table struct {
	w      io.Writer
	op     Op       // of the table being printed
	algo   string   // of the table being printed
	tuning []Result // every row, with --algo all: Close prints the fastest
	tune   bool
	// estimates says the rows carry the model's estimate.
	estimates bool
	rows      int
	busSum    float64
	wrong     int64
	check     bool
	err       error // the first write error; later writes are skipped
}

// NewTable prints h and returns a table for the rows.
func NewTable(w io.Writer, h Header) *Table {
	c := h.Config
	t := &Table{w: w, check: c.Check, tune: c.Algorithm == AllAlgorithms}
	t.estimates = t.tune && c.Model.BytesPerSecond > 0
	check, algo := 0, c.Algorithm
	if c.Check {
		check = 1
	}
	if algo == "" {
		algo = "auto"
	}
	t.printf("# gocomms bench: gocomms %s, %d ranks, rank 0 on host %s\n", h.Version, h.Ranks, h.Host)
	t.printf("# minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d validation: %d dtype: %v redop: %s root: %d algo: %s\n",
		c.MinBytes, c.MaxBytes, c.Factor, c.Warmup, c.Iters, check, c.DType, redOpName(c.RedOp), c.Root, algo)
	if t.estimates {
		t.printf("# est: each schedule run on an alpha-beta model: %.0f us latency, %.0f us sender overhead a message, %.3g GB/s a port\n",
			c.Model.Alpha*1e6, c.Model.Overhead*1e6, c.Model.BytesPerSecond/1e9)
	}
	return t
}

func (t *Table) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// Add prints r, under a new table heading when its op differs from the
// previous row's.
func (t *Table) Add(r Result) error {
	if r.Unsupported != "" {
		t.closeOp()
		t.printf("#\n# %v: unsupported: %s\n", r.Op, r.Unsupported)
		return t.err
	}
	if t.rows == 0 || r.Op != t.op || r.Algorithm != t.algo {
		t.closeOp()
		t.op, t.algo = r.Op, r.Algorithm
		if r.Algorithm != "" {
			t.printf("#\n# %v by %s\n", r.Op, r.Algorithm)
		} else {
			t.printf("#\n# %v\n", r.Op)
		}
		t.printf("#       size         count      type   redop    root     time   algbw   busbw #wrong%s\n", t.column("      est"))
		t.printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       %s\n", t.column("     (us)"))
	}
	wrong := "N/A"
	if r.Checked {
		wrong = fmt.Sprint(r.Wrong)
	}
	est := ""
	if r.EstimateUS > 0 {
		est = "  " + formatTime(r.EstimateUS)
	}
	t.printf("%12d  %12d  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s%s\n",
		r.Bytes, r.Count, r.DType, r.RedOp, r.Root, formatTime(r.TimeUS), r.AlgBW, r.BusBW, wrong, est)
	if t.tune {
		t.tuning = append(t.tuning, r)
	}
	t.rows++
	t.busSum += r.BusBW
	t.wrong += r.Wrong
	return t.err
}

// column is a heading of the estimate column, which --algo all with a
// model adds.
func (t *Table) column(heading string) string {
	if t.estimates {
		return heading
	}
	return ""
}

// closeOp prints the average bus bandwidth of the op's rows.
func (t *Table) closeOp() {
	if t.rows > 0 && t.op != Op(algorithms.Barrier) {
		t.printf("# Avg bus bandwidth    : %.6g \n", t.busSum/float64(t.rows))
	}
	t.rows, t.busSum = 0, 0
}

// Close prints the closing lines: the last op's average bus bandwidth, the
// fastest schedule of each op and size with --algo all, and the wrong
// elements over every row.
func (t *Table) Close() error {
	t.closeOp()
	if t.tune {
		t.printTuning()
	}
	switch {
	case !t.check:
		t.printf("#\n# Out of bounds values : N/A (not checked)\n#\n")
	case t.wrong > 0:
		t.printf("#\n# Out of bounds values : %d FAILED\n#\n", t.wrong)
	default:
		t.printf("#\n# Out of bounds values : 0 OK\n#\n")
	}
	return t.err
}

// printTuning prints, for each op and size, the schedule that ran fastest
// and its bus bandwidth, beside the runner-up: the table a selector for
// this machine would ship.
func (t *Table) printTuning() {
	t.printf("#\n# fastest schedule per size\n")
	t.printf("#   op                      size   fastest               busbw   next                  busbw\n")
	type opSize struct {
		op   Op
		size int64
	}
	seen := map[opSize]bool{}
	for _, r := range t.tuning { // the first schedule's rows give the order
		if seen[opSize{r.Op, r.Bytes}] {
			continue
		}
		seen[opSize{r.Op, r.Bytes}] = true
		best, next := t.fastest(r.Op, r.Bytes)
		nextName, nextBW := "-", "-"
		if next != nil {
			nextName, nextBW = scheduleName(next.Algorithm), fmt.Sprintf("%6.2f", next.BusBW)
		}
		t.printf("#   %-16s %12d   %-20s %6.2f   %-20s %6s\n", r.Op, r.Bytes, scheduleName(best.Algorithm), best.BusBW, nextName, nextBW)
	}
}

// scheduleName is algo, or what stands for gocomms' choice.
func scheduleName(algo string) string {
	if algo == "" {
		return "(gocomms)"
	}
	return algo
}

// fastest returns the quickest and second quickest rows of op at size.
func (t *Table) fastest(op Op, size int64) (best Result, next *Result) {
	var rows []Result
	for _, r := range t.tuning {
		if r.Op == op && r.Bytes == size {
			rows = append(rows, r)
		}
	}
	slices.SortStableFunc(rows, func(a, b Result) int { return cmp.Compare(a.TimeUS, b.TimeUS) })
	if len(rows) > 1 {
		next = &rows[1]
	}
	return rows[0], next
}

// formatTime is nccl-tests' time column: fewer decimals as time grows, so
// that it stays seven characters wide.
func formatTime(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	}
	return fmt.Sprintf("%7.2f", us)
}

const module = "github.com/gocomms/gocomms"

// Version is the gocomms version the running binary was built from, as the
// Go toolchain recorded it: a tag, a pseudo-version from version control,
// or "(devel)"; a binary built in a gocomms checkout adds the commit and
// whether the tree had uncommitted changes, "v1.2.3 (revision 3f2a…,
// modified)".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if bi.Main.Path == module {
		return mainVersion(bi)
	}
	for _, d := range bi.Deps {
		if d.Path == module {
			return d.Version
		}
	}
	return "(devel)"
}

// mainVersion is the version of gocomms built as the main module, with the
// version-control settings the toolchain stamped, if any.
func mainVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return v
	}
	if modified == "true" {
		return v + " (revision " + rev + ", modified)"
	}
	return v + " (revision " + rev + ")"
}
