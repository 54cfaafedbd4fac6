package rma

import (
	"slices"
	"strings"
	"testing"
)

func TestParseOps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Op
	}{
		{"all", Ops},
		{"put", []Op{Put}},
		{"get,put", []Op{Put, Get}}, // sweep order, as mpi_rma.c
		{"compare_and_swap,fetch_and_op,put_pipelined", []Op{PutPipelined, FetchAndOp, CompareAndSwap}},
		{"put,put", []Op{Put}},
		{"all,get", Ops},
	} {
		got, err := ParseOps(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseOps(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "put,", "all_reduce", "PUT", "op(1)"} {
		if got, err := ParseOps(in); err == nil {
			t.Errorf("ParseOps(%q) = %v, want an error", in, got)
		}
	}
	for _, o := range Ops {
		if got, err := ParseOps(o.String()); err != nil || !slices.Equal(got, []Op{o}) {
			t.Errorf("ParseOps(%q) = %v, %v", o, got, err)
		}
	}
}

func TestSizes(t *testing.T) {
	c := DefaultConfig()
	c.MinBytes, c.MaxBytes, c.Factor = 8, 64<<20, 8192
	if got := c.Sizes(Put); !slices.Equal(got, []int64{8, 65536}) {
		t.Errorf("8 to 64M by 8192: %v", got)
	}
	c.MinBytes, c.MaxBytes, c.Factor = 1<<20, 64<<20, 64
	if got := c.Sizes(Get); !slices.Equal(got, []int64{1 << 20, 64 << 20}) {
		t.Errorf("1M to 64M by 64: %v", got)
	}
	c.MinBytes, c.MaxBytes, c.Factor = 3, 100, 3
	if got := c.Sizes(PutPipelined); !slices.Equal(got, []int64{3, 9, 27, 81}) {
		t.Errorf("3 to 100 by 3: %v", got)
	}
	for _, o := range []Op{FetchAndOp, CompareAndSwap} {
		if got := c.Sizes(o); !slices.Equal(got, []int64{8}) {
			t.Errorf("%v: sizes %v, want one row of 8 bytes", o, got)
		}
	}
	c.MinBytes, c.MaxBytes, c.Factor = 1<<30, maxWindow, 1<<40 // no overflow past MaxBytes
	if got := c.Sizes(Put); !slices.Equal(got, []int64{1 << 30}) {
		t.Errorf("a factor past the end: %v", got)
	}
}

// TestCounts: iterations are cut as mpi_rma.c cuts them, to Volume bytes
// a size, at least one, and warm-ups to no more than the timed ops.
func TestCounts(t *testing.T) {
	c := DefaultConfig() // 100 and 10, 1 GiB
	for _, tc := range []struct {
		size           int64
		volume         int64
		iters, warmups int
	}{
		{8, 1 << 30, 100, 10},
		{1 << 20, 1 << 30, 100, 10},
		{64 << 20, 1 << 30, 16, 10},
		{64 << 20, 256 << 20, 4, 4},
		{64 << 20, 1 << 20, 1, 1},
		{64 << 20, 0, 100, 10},
	} {
		c.Volume = tc.volume
		if n, w := c.Counts(tc.size); n != tc.iters || w != tc.warmups {
			t.Errorf("size %d, volume %d: %d and %d, want %d and %d", tc.size, tc.volume, n, w, tc.iters, tc.warmups)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if got := ok.WindowBytes(); got != 64<<20 {
		t.Errorf("the default window is %d bytes, want -e's", got)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no ops", func(c *Config) { c.Ops = nil }, "no op"},
		{"zero min", func(c *Config) { c.MinBytes = 0 }, "-b"},
		{"max below min", func(c *Config) { c.MinBytes, c.MaxBytes = 16, 8 }, "below -b"},
		{"huge", func(c *Config) { c.MaxBytes = 4 << 30 }, "largest window"},
		{"factor", func(c *Config) { c.Factor = 1 }, "-f"},
		{"iters", func(c *Config) { c.Iters = 0 }, "-n"},
		{"warmup", func(c *Config) { c.Warmup = -1 }, "-w"},
		{"volume", func(c *Config) { c.Volume = -1 }, "-V"},
		{"window", func(c *Config) { c.Window = 1 << 20 }, "-W"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if err := ok.ValidateRanks(1); err == nil {
		t.Error("one rank: no error")
	}
	if err := ok.ValidateRanks(2); err != nil {
		t.Errorf("two ranks: %v", err)
	}
	small := DefaultConfig()
	small.MaxBytes, small.Window = 3, 13
	if got := small.WindowBytes(); got != 16 {
		t.Errorf("-e 3 -W 13: a window of %d bytes, want 16 (whole words)", got)
	}
	small.Window = 0
	if got := small.WindowBytes(); got != 8 {
		t.Errorf("-e 3: a window of %d bytes, want 8 (the atomics' word)", got)
	}
}

// TestPatternAvoidsFiller: no byte of a check's pattern equals what the
// timed loops carry, so that a byte left from them is always wrong.
func TestPatternAvoidsFiller(t *testing.T) {
	for seq := range 300 {
		for i := range 300 {
			if pat(i, seq) == filler {
				t.Fatalf("pat(%d, %d) is the filler", i, seq)
			}
		}
	}
	if pat(0, 1) == pat(0, 2) {
		t.Error("consecutive checks put the same first byte")
	}
}
