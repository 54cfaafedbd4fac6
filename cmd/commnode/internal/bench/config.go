package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	sizesweep "github.com/gocomms/gocomms/cmd/commnode/internal/sweep"
)

// Config is one sweep: every op in Ops, at every size from MinBytes to
// MaxBytes growing by Factor.
type Config struct {
	Ops      []Op             // run in this order; at least one
	DType    gocomms.DType    // element type of every buffer
	RedOp    gocomms.ReduceOp // for the ops that reduce; one of RedOps
	Root     int              // for the ops that have a root; in [0, ranks)
	MinBytes int64            // first size, >= 1
	MaxBytes int64            // last size at most, >= MinBytes
	Factor   int64            // size multiplier between rows, >= 2
	Iters    int              // timed ops per size, >= 1
	Warmup   int              // untimed ops per size before them, >= 0
	// Blocking waits for each op before issuing the next, as a caller of
	// the blocking forms (and MPI's) does, instead of issuing them all
	// and waiting once (nccl-tests' -z).
	Blocking bool
	// Registered allocates the buffers with Comm.Alloc: memory the
	// host's ranks map, which a collective reads in place.
	Registered bool
	Check      bool   // run one more op per size and count wrong elements
	Algorithm  string // gocomms.HintAlgorithm for the ops that have it; "" lets gocomms choose; AllAlgorithms runs each

	// Model, with AllAlgorithms, estimates each row's time by running its
	// schedule on an alpha-beta model (algorithms.Estimate); a zero Model
	// estimates nothing.
	Model algorithms.Model

	// Progress, if set, is called on every rank before each size.
	Progress func(Step)

	// Unsupported, if set, is the error with which the communicator's
	// backend declines an op it has no counterpart for
	// (nccl.ErrUnsupported): Run reports the op once as unsupported and
	// goes on to the next, as every rank declines it alike.
	Unsupported error
}

// Step says where a sweep stands: row Index (from 1) of Total.
type Step struct {
	Op           Op
	Bytes        int64
	Index, Total int
}

// AllAlgorithms as the Algorithm runs every op with each of its schedules
// in turn, and reports the fastest per size: the table tuning produces.
const AllAlgorithms = "all"

// DefaultConfig is nccl-tests' defaults: all_reduce of float32 sums from 8
// bytes to 64 MiB, doubling, 20 timed iterations after 5 warm-ups, checked.
func DefaultConfig() Config {
	return Config{
		Ops: []Op{Op(algorithms.AllReduce)}, DType: gocomms.Float32, RedOp: gocomms.Sum,
		MinBytes: 8, MaxBytes: 64 << 20, Factor: 2, Iters: 20, Warmup: 5, Check: true,
	}
}

// RedOps are the reductions --redop names, with nccl-tests' names.
var RedOps = []struct {
	Name string
	Op   gocomms.ReduceOp
}{
	{"sum", gocomms.Sum}, {"prod", gocomms.Product}, {"min", gocomms.Min}, {"max", gocomms.Max},
	{"avg", gocomms.Avg}, {"band", gocomms.BAnd}, {"bor", gocomms.BOr}, {"bxor", gocomms.BXor},
}

// ParseRedOp parses a --redop name.
func ParseRedOp(s string) (gocomms.ReduceOp, error) {
	names := make([]string, len(RedOps))
	for i, r := range RedOps {
		if r.Name == s {
			return r.Op, nil
		}
		names[i] = r.Name
	}
	return gocomms.ReduceOp{}, fmt.Errorf("unknown redop %q (have %s)", s, strings.Join(names, ", "))
}

func redOpName(op gocomms.ReduceOp) string {
	for _, r := range RedOps {
		if r.Op == op {
			return r.Name
		}
	}
	return op.String()
}

// ParseBytes parses a size as nccl-tests does: a number of bytes, with an
// optional suffix K, M or G (powers of 1024, either case), also written
// KiB, MiB or GiB.
func ParseBytes(s string) (int64, error) {
	orig := s
	s = strings.TrimSuffix(s, "iB")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:n-1]
		} else if len(s) != len(orig) {
			s = orig // "iB" without a multiple: let the parse fail
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q: want bytes, optionally with K, M or G (or KiB, MiB, GiB)", orig)
	}
	if v > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", orig)
	}
	return v * mult, nil
}

// Validate checks what can be checked before the job is known.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Ops) == 0 {
		bad("no op to run")
	}
	if !c.DType.Valid() {
		bad("invalid dtype %v", c.DType)
	}
	sizesweep.Check(bad, c.MinBytes, c.MaxBytes, c.Factor, c.Iters, c.Warmup, func(e int64) {
		if e > math.MaxInt/2 {
			bad("-e %d is too large", e)
		}
	})
	if c.Root < 0 {
		bad("--root must not be negative")
	}
	if slices.ContainsFunc(c.Ops, Op.Reduces) {
		if err := c.RedOp.Supports(c.DType); err != nil {
			bad("--redop %s is not defined for %v", redOpName(c.RedOp), c.DType)
		}
	}
	if c.Algorithm != "" && c.Algorithm != AllAlgorithms && !slices.ContainsFunc(c.Ops, c.hasAlgorithm) {
		var have []string
		for _, o := range c.Ops {
			have = append(have, fmt.Sprintf("%v: %s", o, strings.Join(o.Algorithms(), ", ")))
		}
		bad("--algo %q is not an algorithm of the ops run (%s)", c.Algorithm, strings.Join(have, "; "))
	}
	return errors.Join(errs...)
}

// ValidateRanks checks what depends on the number of ranks.
func (c *Config) ValidateRanks(p int) error {
	if c.Root >= p && slices.ContainsFunc(c.Ops, Op.Rooted) {
		return fmt.Errorf("--root %d out of range for %d ranks", c.Root, p)
	}
	if p < 2 && slices.Equal(c.Ops, []Op{SendRecv}) {
		return errors.New("send_recv needs at least 2 ranks")
	}
	return nil
}

// hasAlgorithm reports whether --algo applies to o; the other ops of an
// `--op all` sweep run with gocomms' choice.
func (c *Config) hasAlgorithm(o Op) bool {
	return c.Algorithm != "" && slices.Contains(o.Algorithms(), c.Algorithm)
}

// algorithms are the schedules o runs with, one sweep of sizes each: all
// of them with AllAlgorithms, --algo's where it applies, else gocomms'
// choice ("").
func (c *Config) algorithms(o Op) []string {
	switch {
	case c.Algorithm == AllAlgorithms && len(o.Algorithms()) > 0:
		return o.Algorithms()
	case c.hasAlgorithm(o):
		return []string{c.Algorithm}
	}
	return []string{""}
}

// sizes returns the buffer sizes of the sweep, in bytes.
func (c *Config) sizes() []int64 {
	return sizesweep.Sizes(c.MinBytes, c.MaxBytes, c.Factor)
}

// runs reports whether o runs on p ranks: send_recv in a sweep of every op
// is left out on one rank, where a ring exchange has no peer.
func runs(o Op, p int) bool { return o != SendRecv || p > 1 }
