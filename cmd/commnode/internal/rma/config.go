package rma

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/sweep"
	"github.com/gocomms/gocomms/internal/names"
)

// Op is a one-sided operation the bench times.
type Op uint8

// The operations, in the order a sweep runs them (mpi_rma.c's order).
const (
	Put            Op = iota + 1 // Put, then Flush of the target: completed there
	PutPipelined                 // Iters puts back to back, then one Flush
	Get                          // Get: it returns with the bytes, completed
	FetchAndOp                   // FetchAndOp of one int64, Sum of 1: a round trip
	CompareAndSwap               // CompareAndSwap of one int64 that succeeds
)

var opNames = [...]string{
	Put: "put", PutPipelined: "put_pipelined", Get: "get",
	FetchAndOp: "fetch_and_op", CompareAndSwap: "compare_and_swap",
}

// Ops are every operation, in sweep order.
var Ops = []Op{Put, PutPipelined, Get, FetchAndOp, CompareAndSwap}

func (o Op) valid() bool { return o >= Put && o <= CompareAndSwap }

func (o Op) String() string { return names.Of(o, "op", opNames[:]) }

// MarshalText writes the op's name, for the JSON lines.
func (o Op) MarshalText() ([]byte, error) {
	if !o.valid() {
		return nil, fmt.Errorf("rma: invalid op %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// Atomic reports whether o works on one 8-byte word, whatever the sizes
// of the sweep.
func (o Op) Atomic() bool { return o == FetchAndOp || o == CompareAndSwap }

// ParseOps parses --op: a comma-separated list of names, or "all". The
// result is in sweep order, each op once, as mpi_rma.c runs its list.
func ParseOps(list string) ([]Op, error) {
	want := map[Op]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "all" {
			for _, o := range Ops {
				want[o] = true
			}
			continue
		}
		i := slices.Index(opNames[:], name)
		if name == "" || i < 0 {
			return nil, fmt.Errorf("unknown op %q (have %s, or all)", name, strings.Join(opNames[Put:], ", "))
		}
		want[Op(i)] = true
	}
	var ops []Op
	for _, o := range Ops {
		if want[o] {
			ops = append(ops, o)
		}
	}
	return ops, nil
}

// Origin and TargetRank are the ranks of the pair that runs the sweep:
// rank 0 issues every operation on rank 1's window. Other ranks of the job
// idle, taking part only in the window's creation, the barriers and the
// reductions of each row.
const (
	Origin     = 0
	TargetRank = 1
)

// Config is one sweep: every op of Ops, the bulk ones at every size from
// MinBytes to MaxBytes growing by Factor, the atomic ones once, on 8
// bytes.
type Config struct {
	Ops      []Op  // in sweep order; at least one
	MinBytes int64 // first size of put, put_pipelined and get, >= 1
	MaxBytes int64 // last size at most, >= MinBytes
	Factor   int64 // size multiplier between rows, >= 2
	Iters    int   // timed ops per size, >= 1, before Volume's cut
	Warmup   int   // untimed ops per size before them, >= 0, at most the timed ones
	// Volume cuts Iters to max(1, Volume/size) where Iters ops would move
	// more bytes, as mpi_rma.c's -V: 1 GiB by default; 0 never cuts.
	Volume int64
	// Window is the bytes of each rank's window, at least MaxBytes; 0
	// means max(MaxBytes, 8). It is rounded up to whole 8-byte words.
	Window int64
	Check  bool // after each timed loop, check what moved and count wrong bytes or values

	// Started, if set, is called on every rank once the window exists,
	// with how this rank reaches the target's window.
	Started func(access gocomms.AccessType) error
}

// DefaultConfig is mpi_rma.c's defaults: every op, 8 B to 64 MiB
// doubling, 100 timed ops after 10 warm-ups, at most 1 GiB moved per size
// and op, checked (mpi_rma.c checks only with -c).
func DefaultConfig() Config {
	return Config{
		Ops: slices.Clone(Ops), MinBytes: 8, MaxBytes: 64 << 20, Factor: 2,
		Iters: 100, Warmup: 10, Volume: 1 << 30, Check: true,
	}
}

// maxWindow bounds the window, so that every offset fits the wire's and
// an int's range on every platform gocomms builds for.
const maxWindow = math.MaxInt32

// Validate checks what can be checked before the job is known.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Ops) == 0 {
		bad("no op to run")
	}
	for _, o := range c.Ops {
		if !o.valid() {
			bad("invalid op %d", uint8(o))
		}
	}
	sweep.Check(bad, c.MinBytes, c.MaxBytes, c.Factor, c.Iters, c.Warmup, func(e int64) {
		if e > maxWindow {
			bad("-e %d is above the largest window, %d bytes", e, int64(maxWindow))
		}
	})
	if c.Volume < 0 {
		bad("-V must not be negative")
	}
	if c.Window != 0 && c.Window < c.MaxBytes {
		bad("-W %d is below -e %d: the window must hold the largest size", c.Window, c.MaxBytes)
	}
	if c.Window > maxWindow {
		bad("-W %d is above the largest window, %d bytes", c.Window, int64(maxWindow))
	}
	return errors.Join(errs...)
}

// ValidateRanks checks what depends on the number of ranks.
func (c *Config) ValidateRanks(p int) error {
	if p < 2 {
		return fmt.Errorf("the RMA bench needs at least 2 ranks (rank %d targets rank %d), not %d", Origin, TargetRank, p)
	}
	return nil
}

// WindowBytes is the size of each rank's window.
func (c *Config) WindowBytes() int {
	w := max(c.Window, c.MaxBytes, 8)
	return int((w + 7) / 8 * 8)
}

// Sizes returns the sizes o runs at, in bytes: one, 8, for the atomics.
func (c *Config) Sizes(o Op) []int64 {
	if o.Atomic() {
		return []int64{8}
	}
	return sweep.Sizes(c.MinBytes, c.MaxBytes, c.Factor)
}

// Counts returns the timed and warm-up ops at size bytes: Iters and
// Warmup, cut where Iters ops would move more than Volume bytes.
func (c *Config) Counts(size int64) (iters, warmup int) {
	iters = c.Iters
	if c.Volume > 0 && int64(iters)*size > c.Volume {
		iters = int(max(1, c.Volume/size))
	}
	return iters, min(c.Warmup, iters)
}
