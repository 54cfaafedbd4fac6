package rma

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// Result is one row: one op at one size.
type Result struct {
	Op      Op      `json:"op"`
	Ranks   int     `json:"ranks"`
	Bytes   int64   `json:"size"`    // moved by one op; 8 for the atomics
	Iters   int     `json:"iters"`   // timed ops, after Volume's cut
	TimeUS  float64 `json:"time_us"` // per op: the origin's elapsed time over Iters
	GBps    float64 `json:"GBps"`    // Bytes × Iters over the elapsed time, 10^9 bytes a second
	Checked bool    `json:"checked"`
	Wrong   int64   `json:"wrong"` // bytes or values, summed over ranks; 0 when not checked
}

// Header is what rank 0 prints before the rows, as comment lines.
type Header struct {
	Version   string // of gocomms
	Host      string // of rank 0
	Ranks     int
	Transport string // GOCOMMS_TRANSPORT, or what carries in-process ranks
	Access    string // how the origin reaches the target's window: separate or unified
	Config    Config
}

// Columns is the line that names the columns, mpi_rma.c's.
const Columns = "# op size_bytes iters time_us GBps wrong"

// WriteHeader writes h as mpi_rma.c writes its own: lines that start with
// '#', the last one naming the columns.
func WriteHeader(w io.Writer, h Header) error {
	c := h.Config
	check := 0
	if c.Check {
		check = 1
	}
	_, err := fmt.Fprintf(w, "# gocomms rma: gocomms %s, np=%d pairs=1 (rank %d targets rank %d; the others idle), rank 0 on host %s\n"+
		"# iters=%d warmup=%d volume=%d check=%d window=%d transport=%s access=%s\n%s\n",
		h.Version, h.Ranks, Origin, TargetRank, h.Host,
		c.Iters, c.Warmup, c.Volume, check, c.WindowBytes(), h.Transport, h.Access, Columns)
	return err
}

// WriteLine writes r in mpi_rma.c's format, "op size_bytes iters time_us
// GBps wrong", so that one parser reads the lines of both; wrong is "-"
// when r was not checked.
func WriteLine(w io.Writer, r Result) error {
	wrong := "-"
	if r.Checked {
		wrong = strconv.FormatInt(r.Wrong, 10)
	}
	_, err := fmt.Fprintf(w, "%s %d %d %.3f %.6f %s\n", r.Op, r.Bytes, r.Iters, r.TimeUS, r.GBps, wrong)
	return err
}

// WriteJSON writes r as one line of JSON.
func WriteJSON(w io.Writer, r Result) error { return json.NewEncoder(w).Encode(r) }
