package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
)

// Result is one row: one op at one size.
type Result struct {
	Op      Op      `json:"op"`
	Ranks   int     `json:"ranks"`
	Bytes   int64   `json:"size"`    // per rank: the larger of its send and receive buffers
	Count   int64   `json:"count"`   // elements; one rank's block where the op splits the buffer
	DType   string  `json:"type"`    // "none" for barrier
	RedOp   string  `json:"redop"`   // "none" for ops that do not reduce
	Root    int     `json:"root"`    // -1 for ops without one
	TimeUS  float64 `json:"time_us"` // per op, the largest over ranks
	AlgBW   float64 `json:"algbw"`   // GB/s (10^9 bytes): Bytes over time
	BusBW   float64 `json:"busbw"`   // GB/s: AlgBW × Op.BusFactor(Ranks)
	Checked bool    `json:"checked"`
	Wrong   int64   `json:"wrong"` // elements, summed over ranks; 0 when not checked
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
	op     Op // of the table being printed; 0 before the first row
	rows   int
	busSum float64
	wrong  int64
	check  bool
	err    error // the first write error; later writes are skipped
}

// NewTable prints h and returns a table for the rows.
func NewTable(w io.Writer, h Header) *Table {
	c := h.Config
	t := &Table{w: w, check: c.Check}
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
	if r.Op != t.op {
		t.closeOp()
		t.op = r.Op
		t.printf("#\n# %v\n", r.Op)
		t.printf("#       size         count      type   redop    root     time   algbw   busbw #wrong\n")
		t.printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       \n")
	}
	wrong := "N/A"
	if r.Checked {
		wrong = fmt.Sprint(r.Wrong)
	}
	t.printf("%12d  %12d  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s\n",
		r.Bytes, r.Count, r.DType, r.RedOp, r.Root, formatTime(r.TimeUS), r.AlgBW, r.BusBW, wrong)
	t.rows++
	t.busSum += r.BusBW
	t.wrong += r.Wrong
	return t.err
}

// closeOp prints the average bus bandwidth of the op's rows.
func (t *Table) closeOp() {
	if t.rows > 0 && t.op != Barrier {
		t.printf("# Avg bus bandwidth    : %.6g \n", t.busSum/float64(t.rows))
	}
	t.rows, t.busSum = 0, 0
}

// Close prints the closing lines: the last op's average bus bandwidth and
// the wrong elements over every row.
func (t *Table) Close() error {
	t.closeOp()
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
