package bench

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"8", 8}, {"0", 0}, {"1K", 1 << 10}, {"64k", 64 << 10}, {"64M", 64 << 20}, {"3m", 3 << 20},
		{"2G", 2 << 30}, {"1g", 1 << 30}, {"1MiB", 1 << 20}, {"64KiB", 64 << 10}, {"2GiB", 2 << 30},
	} {
		if got, err := ParseBytes(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "K", "-1", "1.5M", "1T", "1KB", "8iB", "MiB", "9223372036854775807G"} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseOps(t *testing.T) {
	all, err := ParseOps("all")
	if err != nil || len(all) != 10 || all[0] != Op(algorithms.AllReduce) || all[9] != SendRecv {
		t.Fatalf("ParseOps(all) = %v, %v", all, err)
	}
	for _, o := range all {
		got, err := ParseOps(o.String())
		if err != nil || !slices.Equal(got, []Op{o}) {
			t.Errorf("ParseOps(%q) = %v, %v", o, got, err)
		}
	}
	for _, alias := range []string{"allreduce", "all-reduce", "AllReduce"} {
		if got, err := ParseOps(alias); err != nil || !slices.Equal(got, []Op{Op(algorithms.AllReduce)}) {
			t.Errorf("ParseOps(%q) = %v, %v; want all_reduce", alias, got, err)
		}
	}
	if _, err := ParseOps("allreduced"); err == nil || !strings.Contains(err.Error(), "all_reduce") {
		t.Errorf("ParseOps(allreduced): %v, want an error listing the names", err)
	}
}

func TestParseRedOp(t *testing.T) {
	for _, r := range RedOps {
		if op, err := ParseRedOp(r.Name); err != nil || op != r.Op || redOpName(op) != r.Name {
			t.Errorf("ParseRedOp(%q) = %v, %v", r.Name, op, err)
		}
	}
	if _, err := ParseRedOp("product"); err == nil {
		t.Error("ParseRedOp(product) succeeded; nccl-tests calls it prod")
	}
}

func TestValidate(t *testing.T) {
	if c := DefaultConfig(); c.Validate() != nil {
		t.Fatalf("DefaultConfig: %v", c.Validate())
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no ops", func(c *Config) { c.Ops = nil }, "no op"},
		{"dtype", func(c *Config) { c.DType = 0 }, "invalid dtype"},
		{"min", func(c *Config) { c.MinBytes = 0 }, "-b"},
		{"max below min", func(c *Config) { c.MinBytes, c.MaxBytes = 16, 8 }, "below -b"},
		{"max too large", func(c *Config) { c.MaxBytes = math.MaxInt64 }, "too large"},
		{"factor", func(c *Config) { c.Factor = 1 }, "-f"},
		{"iters", func(c *Config) { c.Iters = 0 }, "-n"},
		{"warmup", func(c *Config) { c.Warmup = -1 }, "-w"},
		{"root", func(c *Config) { c.Root = -1 }, "--root"},
		{"redop for dtype", func(c *Config) { c.RedOp = gocomms.BAnd }, "not defined for float32"},
		{"algo", func(c *Config) { c.Algorithm = "pairwise" }, "all_reduce: ring, recursive_doubling"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error with %q", tc.name, err, tc.want)
		}
	}

	// A redop a dtype lacks, or an algorithm one op lacks, is fine when
	// no op needs it.
	c := DefaultConfig()
	c.Ops, c.RedOp, c.Algorithm = []Op{Op(algorithms.Broadcast), Op(algorithms.AllToAll)}, gocomms.BAnd, "pairwise"
	if err := c.Validate(); err != nil {
		t.Errorf("broadcast and all_to_all with band and pairwise: %v", err)
	}
}

func TestValidateRanks(t *testing.T) {
	c := DefaultConfig()
	c.Root = 3
	if err := c.ValidateRanks(3); err != nil {
		t.Errorf("root 3 of all_reduce, which has none: %v", err)
	}
	c.Ops = []Op{Op(algorithms.AllReduce), Op(algorithms.Gather)}
	if err := c.ValidateRanks(3); err == nil {
		t.Error("root 3 of gather on 3 ranks: no error")
	}
	c.Root, c.Ops = 0, []Op{SendRecv}
	if err := c.ValidateRanks(1); err == nil {
		t.Error("send_recv on 1 rank: no error")
	}
	c.Ops, _ = ParseOps("all")
	if err := c.ValidateRanks(1); err != nil {
		t.Errorf("every op on 1 rank, which skips send_recv: %v", err)
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		min, max, f int64
		want        []int64
	}{
		{8, 64, 2, []int64{8, 16, 32, 64}},
		{8, 100, 4, []int64{8, 32}},
		{5, 5, 2, []int64{5}},
		{1, math.MaxInt64 / 2, math.MaxInt64 / 4, []int64{1, math.MaxInt64 / 4}},
	} {
		c := Config{MinBytes: tc.min, MaxBytes: tc.max, Factor: tc.f}
		if got := c.sizes(); !slices.Equal(got, tc.want) {
			t.Errorf("sizes(%d, %d, %d) = %v, want %v", tc.min, tc.max, tc.f, got, tc.want)
		}
	}
}

// TestCountsAndBusFactors checks the counts and factors against
// nccl-tests' getCollByteCount and getBw for 1000 elements on 4 ranks.
func TestCountsAndBusFactors(t *testing.T) {
	for _, tc := range []struct {
		op                Op
		send, recv, param int
		factor            float64
	}{
		{Op(algorithms.AllReduce), 1000, 1000, 1000, 1.5},
		{Op(algorithms.Reduce), 1000, 1000, 1000, 1},
		{Op(algorithms.Broadcast), 1000, 1000, 1000, 1},
		{Op(algorithms.AllGather), 250, 1000, 250, 0.75},
		{Op(algorithms.ReduceScatter), 1000, 250, 250, 0.75},
		{Op(algorithms.AllToAll), 1000, 1000, 250, 0.75},
		{Op(algorithms.Gather), 250, 1000, 250, 0.75},
		{Op(algorithms.Scatter), 1000, 250, 250, 0.75},
		{SendRecv, 1000, 1000, 1000, 1},
		{Op(algorithms.Barrier), 0, 0, 0, 0},
	} {
		s, r, p := tc.op.Counts(1000, 4)
		if s != tc.send || r != tc.recv || p != tc.param {
			t.Errorf("%v: counts %d, %d, %d; want %d, %d, %d", tc.op, s, r, p, tc.send, tc.recv, tc.param)
		}
		if f := tc.op.BusFactor(4); f != tc.factor {
			t.Errorf("%v: bus factor %v, want %v", tc.op, f, tc.factor)
		}
	}
	if _, r, p := Op(algorithms.AllGather).Counts(10, 4); r != 8 || p != 2 {
		t.Errorf("all_gather of 10 elements on 4 ranks: recv %d, count %d; want 8, 2", r, p)
	}
}
