package commtest_test

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
)

// TestWrongResultsAreReported has rank 1 corrupt its input to every int32
// sum all-reduce: each rank must report exactly those cases, with a
// Mismatch that names the element and replays.
func TestWrongResultsAreReported(t *testing.T) {
	plan := commtest.Plan{DTypes: []gocomms.DType{gocomms.Int32}, Counts: []int{0, 3, 5}, Keep: 1}
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			c.RegisterPreHook(func(op *gocomms.Op) error {
				if op.Name == gocomms.OpAllReduce && op.Reduce == gocomms.Sum && op.Inputs[0].Numel() > 2 {
					op.Inputs[0].SetInt64(2, op.Inputs[0].Int64At(2)+1)
				}
				return nil
			})
		}
		rep, err := commtest.Sweep(ctx, c, plan)
		if err != nil {
			return err
		}
		if rep.Wrong() != 2 || len(rep.Mismatches) != 1 {
			return fmt.Errorf("rank %d: %d wrong, %d kept; want 2 and 1: %v", c.Rank(), rep.Wrong(), len(rep.Mismatches), rep.Err())
		}
		if got := rep.Tally()[0]; got != (commtest.Tally{Collective: "all_reduce", Cases: 24, Wrong: 2}) {
			return fmt.Errorf("rank %d: all_reduce tally %+v", c.Rank(), got)
		}
		m := rep.Mismatches[0]
		want := commtest.Case{Collective: "all_reduce", DType: gocomms.Int32, Op: gocomms.Sum, Count: 3, Seed: m.Case.Seed}
		if m.Rank != c.Rank() || m.Case != want || m.Where != "output" || m.Index != 2 {
			return fmt.Errorf("rank %d: mismatch %v", c.Rank(), m)
		}
		if g, _ := strconv.Atoi(m.Got); strconv.Itoa(g-1) != m.Want {
			return fmt.Errorf("rank %d: got %s, want %s; the corruption adds one", c.Rank(), m.Got, m.Want)
		}
		var again *commtest.Mismatch
		if err := (&commtest.Checker{Comm: c}).Run(ctx, m.Case); !errors.As(err, &again) || *again != *m {
			return fmt.Errorf("rank %d: replaying %v gave %v", c.Rank(), m.Case, err)
		}
		if err := rep.Err(); !errors.As(err, &again) || !strings.Contains(err.Error(), "2 of 156 cases wrong") {
			return fmt.Errorf("rank %d: report error %v", c.Rank(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestInvalidCasesRejectedOnEveryRank(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		ck := &commtest.Checker{Comm: c}
		cases := map[string]error{
			"unknown":        ck.Run(ctx, commtest.Case{Collective: "all_reduce_sideways", DType: gocomms.Int8}),
			"no comm":        (&commtest.Checker{}).Broadcast(ctx, gocomms.Int8, 1),
			"invalid dtype":  ck.Broadcast(ctx, gocomms.DType(0), 1),
			"negative count": ck.AllGather(ctx, gocomms.Int8, -1),
			"huge count":     ck.AllGatherSingle(ctx, gocomms.Int8, math.MaxInt/2),
			"unsupported op": ck.AllReduce(ctx, gocomms.Float32, gocomms.BXor, 1),
			"op on a copy":   ck.Run(ctx, commtest.Case{Collective: "broadcast", DType: gocomms.Int8, Op: gocomms.Sum}),
		}
		for what, err := range cases {
			if !errors.Is(err, gocomms.ErrInvalidArgument) {
				return fmt.Errorf("%s: got %v", what, err)
			}
		}
		return c.Barrier(ctx) // nothing was issued: the ranks are still in step
	})
	if err != nil {
		t.Fatal(err)
	}
	for what, p := range map[string]commtest.Plan{
		"no counts":      {},
		"negative count": {Counts: []int{1, -1}},
		"invalid dtype":  {DTypes: []gocomms.DType{0}, Counts: []int{1}},
		"negative keep":  {Counts: []int{1}, Keep: -1},
	} {
		if _, err := p.Cases(); !errors.Is(err, gocomms.ErrInvalidArgument) {
			t.Errorf("plan with %s: got %v", what, err)
		}
	}
}

// TestPlanCases pins the order: per dtype and count, every reduction with
// every valid op, then the collectives that only move data, seeds counting
// up from the plan's.
func TestPlanCases(t *testing.T) {
	p := commtest.Plan{DTypes: []gocomms.DType{gocomms.Bool, gocomms.Float16}, Counts: []int{0, 9}, Seed: 100}
	cs, err := p.Cases()
	if err != nil {
		t.Fatal(err)
	}
	boolOps, floatOps := len(commtest.ValidOps(gocomms.Bool)), len(commtest.ValidOps(gocomms.Float16))
	if boolOps != 7 || floatOps != 6 {
		t.Fatalf("%d ops on bool, %d on float16; want 7 and 6", boolOps, floatOps)
	}
	if want := 2 * (5*boolOps + 12 + 5*floatOps + 12); len(cs) != want {
		t.Fatalf("%d cases, want %d", len(cs), want)
	}
	for i, c := range cs {
		if c.Seed != p.Seed+1+i {
			t.Fatalf("case %d (%v): seed %d, want %d", i, c, c.Seed, p.Seed+1+i)
		}
	}
	first := cs[:5*boolOps+12]
	for i, c := range first {
		if c.DType != gocomms.Bool || c.Count != 0 || (i < 5*boolOps) != (c.Op != gocomms.ReduceOp{}) {
			t.Fatalf("case %d is %v", i, c)
		}
	}
	if got := first[len(first)-1].String(); got != "batch bool count=0 seed=147" {
		t.Errorf("last bool case reads %q", got)
	}
	if got := first[0].String(); got != "all_reduce bool sum count=0 seed=101" {
		t.Errorf("first case reads %q", got)
	}
}

// TestPlanCollectives: a plan of some collectives runs exactly their
// cases of the whole plan, seeds and all; an unknown name is refused.
func TestPlanCollectives(t *testing.T) {
	whole := commtest.Plan{DTypes: []gocomms.DType{gocomms.Int8, gocomms.Float32}, Counts: []int{0, 4}, Seed: 7}
	all, err := whole.Cases()
	if err != nil {
		t.Fatal(err)
	}
	some := whole
	some.Collectives = []string{"reduce", "batch"}
	got, err := some.Cases()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(c commtest.Case) bool { return c.Collective != "reduce" && c.Collective != "batch" })
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("cases of reduce and batch: %v, want %v", got, want)
	}
	if names := commtest.Collectives(); len(names) != 17 || names[0] != "all_reduce" || names[16] != "batch" {
		t.Fatalf("Collectives() = %q", names)
	}
	some.Collectives = []string{"all_reduce", "no_such_op"}
	if _, err := some.Cases(); !errors.Is(err, gocomms.ErrInvalidArgument) {
		t.Fatalf("a plan naming no_such_op: %v, want ErrInvalidArgument", err)
	}
}

// TestAllAdvancesSeed runs every collective at one dtype and count through
// Checker.All, which leaves Seed at the last case's.
func TestAllAdvancesSeed(t *testing.T) {
	cs, err := commtest.Plan{DTypes: []gocomms.DType{gocomms.Uint16}, Counts: []int{3}, Seed: 5}.Cases()
	if err != nil {
		t.Fatal(err)
	}
	err = gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		ck := commtest.Checker{Comm: c, Seed: 5}
		if err := ck.All(ctx, gocomms.Uint16, 3); err != nil {
			return err
		}
		if last := cs[len(cs)-1].Seed; ck.Seed != last {
			return fmt.Errorf("seed %d after All, want %d", ck.Seed, last)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestImports keeps commtest usable from programs: it may import the
// standard library, less testing, and the public package with its leaf
// packages (gpu/cuda reads and writes tensors on GPUs), nothing else.
func TestImports(t *testing.T) {
	allowed := []string{"github.com/gocomms/gocomms", "github.com/gocomms/gocomms/tensor", "github.com/gocomms/gocomms/reduce",
		"github.com/gocomms/gocomms/gpu/cuda"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.Split(p, "/")[0], ".")
			if (std && p == "testing") || (!std && !slices.Contains(allowed, p)) {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// TestUnsupportedCasesPassedOver has every rank decline the bitwise
// all-reduces, as a backend without them does: with Plan.Unsupported
// they are results marked so and the sweep goes on; without, the first
// ends it.
func TestUnsupportedCasesPassedOver(t *testing.T) {
	errNo := fmt.Errorf("no bitwise reductions here: %w", gocomms.ErrInvalidArgument)
	plan := commtest.Plan{DTypes: []gocomms.DType{gocomms.Int32}, Counts: []int{0, 3}, Collectives: []string{"all_reduce"}}
	decline := func(c *gocomms.Comm) {
		c.RegisterPreHook(func(op *gocomms.Op) error {
			if op.Name == gocomms.OpAllReduce && slices.Contains([]gocomms.ReduceOp{gocomms.BAnd, gocomms.BOr, gocomms.BXor}, op.Reduce) {
				return errNo
			}
			return nil
		})
	}
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		decline(c)
		p := plan
		p.Unsupported = errNo
		rep, err := commtest.Sweep(ctx, c, p)
		if err != nil {
			return err
		}
		var declined []string
		for _, r := range rep.Results {
			if r.Unsupported {
				declined = append(declined, fmt.Sprintf("%v %d", r.Op, r.Count))
			}
		}
		if want := []string{"band 0", "bor 0", "bxor 0", "band 3", "bor 3", "bxor 3"}; !slices.Equal(declined, want) || rep.Wrong() != 0 {
			return fmt.Errorf("rank %d: unsupported %q, %d wrong; want %q and none", c.Rank(), declined, rep.Wrong(), want)
		}
		if _, err := commtest.Sweep(ctx, c, plan); !errors.Is(err, errNo) {
			return fmt.Errorf("rank %d: a sweep that does not expect it: %v; want the error", c.Rank(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
