package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/tensor"
)

// sweep runs cfg on ranks in-process ranks, with progress on rank 0, and
// returns rank 0's rows and the wrong elements every rank counted.
func sweep(t *testing.T, ranks int, cfg Config, progress func(Step)) ([]Result, []int64) {
	t.Helper()
	var rows []Result
	wrong := make([]int64, ranks)
	var mu sync.Mutex
	err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
		cfg := cfg
		if c.Rank() == 0 {
			cfg.Progress = progress
		}
		w, err := Run(ctx, c, cfg, func(r Result) error {
			if c.Rank() == 0 {
				rows = append(rows, r)
			}
			return nil
		})
		mu.Lock()
		wrong[c.Rank()] = w
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, wrong
}

// TestRunChecksEveryOp runs every op on 1 to 4 ranks, every dtype with
// every reduction it supports, at sizes that leave some ranks' blocks
// empty, and expects no wrong element.
func TestRunChecksEveryOp(t *testing.T) {
	all, _ := ParseOps("all")
	var reducing, moving []Op
	for _, o := range all {
		if o.Reduces() {
			reducing = append(reducing, o)
		} else {
			moving = append(moving, o)
		}
	}
	for ranks := 1; ranks <= 4; ranks++ {
		for _, dt := range tensor.DTypes() {
			cfg := DefaultConfig()
			cfg.DType, cfg.MinBytes, cfg.MaxBytes, cfg.Factor = dt, 1, 32<<10, 16
			cfg.Iters, cfg.Warmup, cfg.Root = 2, 1, ranks-1
			runs := []Config{}
			for _, op := range supportedRedOps(dt) {
				c := cfg
				c.Ops, c.RedOp = reducing, op
				runs = append(runs, c)
			}
			c := cfg
			c.Ops = moving
			runs = append(runs, c)
			for _, c := range runs {
				name := fmt.Sprintf("%d ranks %v %s", ranks, dt, redOpName(c.RedOp))
				rows, wrong := sweep(t, ranks, c, nil)
				for _, r := range rows {
					if r.Wrong != 0 || r.Checked != (r.Op != Op(algorithms.Barrier)) {
						t.Errorf("%s: %+v", name, r)
					}
				}
				for rank, w := range wrong {
					if w != 0 {
						t.Errorf("%s: Run returned %d wrong on rank %d", name, w, rank)
					}
				}
			}
		}
	}
}

func TestRunRows(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ops = []Op{Op(algorithms.AllReduce), Op(algorithms.AllGather), Op(algorithms.Gather), Op(algorithms.Barrier), SendRecv}
	cfg.MinBytes, cfg.MaxBytes, cfg.Factor, cfg.Root = 8, 1<<10, 4, 2
	cfg.Iters, cfg.Warmup = 3, 0
	var steps []Step
	rows, _ := sweep(t, 4, cfg, func(s Step) { steps = append(steps, s) })

	type row struct {
		op           Op
		bytes, count int64
		dtype, redop string
		root         int
		checked      bool
		busFactor    float64 // busbw / algbw; 0 where nothing moved
	}
	var want []row
	for _, size := range []int64{8, 32, 128, 512} {
		want = append(want, row{Op(algorithms.AllReduce), size, size / 4, "float32", "sum", -1, true, 1.5})
	}
	for _, o := range []Op{Op(algorithms.AllGather), Op(algorithms.Gather)} {
		root := -1
		if o == Op(algorithms.Gather) {
			root = 2
		}
		// Each rank's block is a quarter of the elements: 0, 2, 8 and 32.
		for _, n := range []int64{0, 2, 8, 32} {
			f := 0.75
			if n == 0 {
				f = 0
			}
			want = append(want, row{o, n * 4 * 4, n, "float32", "none", root, true, f})
		}
	}
	want = append(want, row{Op(algorithms.Barrier), 0, 0, "none", "none", -1, false, 0})
	for _, size := range []int64{8, 32, 128, 512} {
		want = append(want, row{SendRecv, size, size / 4, "float32", "none", -1, true, 1})
	}

	var got []row
	for _, r := range rows {
		if r.Ranks != 4 || r.TimeUS <= 0 || r.Wrong != 0 {
			t.Errorf("%+v: want 4 ranks, a positive time and nothing wrong", r)
		}
		f := 0.0
		if r.AlgBW > 0 {
			f = math.Round(r.BusBW/r.AlgBW*1e6) / 1e6
		}
		got = append(got, row{r.Op, r.Bytes, r.Count, r.DType, r.RedOp, r.Root, r.Checked, f})
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n got %+v\nwant %+v", got, want)
	}
	if len(steps) != len(want) {
		t.Fatalf("%d progress steps for %d rows", len(steps), len(want))
	}
	for i, s := range steps {
		if s.Index != i+1 || s.Total != len(want) || s.Op != want[i].op {
			t.Errorf("step %d: %+v", i, s)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		cfg := DefaultConfig()
		cfg.Ops, cfg.Root = []Op{Op(algorithms.Broadcast)}, 2
		_, err := Run(ctx, c, cfg, func(Result) error { return nil })
		if err == nil {
			return errors.New("root 2 of 2 ranks accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunStopsOnReportError: a failing report ends the sweep with its
// error on the rank that reported.
func TestRunStopsOnReportError(t *testing.T) {
	stop := errors.New("stop")
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		cfg := DefaultConfig()
		cfg.MaxBytes = 64
		rows := 0
		_, err := Run(ctx, c, cfg, func(Result) error {
			rows++
			return stop
		})
		if !errors.Is(err, stop) || rows != 1 {
			return fmt.Errorf("rank %d: %d rows, err %v", c.Rank(), rows, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunStopsPromptlyWhenInterrupted: with a million iterations queued,
// cancelling the context on one rank ends the run on every rank within
// seconds: the interrupted rank stops issuing and waiting, and the others
// stop once an op has failed.
func TestRunStopsPromptlyWhenInterrupted(t *testing.T) {
	start := time.Now()
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
		}
		cfg := DefaultConfig()
		cfg.MinBytes, cfg.MaxBytes, cfg.Iters, cfg.Warmup = 64, 64, 1_000_000, 0
		_, err := Run(ctx, c, cfg, func(Result) error { return nil })
		if err == nil {
			return fmt.Errorf("rank %d: a million all-reduces completed in spite of the interruption", c.Rank())
		}
		c.Abort(err)
		return nil
	}, gocomms.WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run ended %v after starting, long after the interruption", took)
	}
}

// TestRunPassesOverUnsupported has every rank decline all_gather, as a
// backend without it would: with Config.Unsupported the op gets one row
// that says so, and the ops after it run.
func TestRunPassesOverUnsupported(t *testing.T) {
	errNo := fmt.Errorf("no all_gather here: %w", gocomms.ErrInvalidArgument)
	ops := []Op{Op(algorithms.AllReduce), Op(algorithms.AllGather), Op(algorithms.Broadcast)}
	var rows []Result
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		c.RegisterPreHook(func(op *gocomms.Op) error {
			if strings.HasPrefix(string(op.Name), "all_gather") {
				return errNo
			}
			return nil
		})
		cfg := DefaultConfig()
		cfg.Ops, cfg.MaxBytes, cfg.Unsupported = ops, 16, errNo
		wrong, err := Run(ctx, c, cfg, func(r Result) error {
			if c.Rank() == 0 {
				rows = append(rows, r)
			}
			return nil
		})
		if err == nil && wrong != 0 {
			err = fmt.Errorf("%d wrong", wrong)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v %d %t", r.Op, r.Bytes, strings.Contains(r.Unsupported, "no all_gather here")))
	}
	if want := []string{"all_reduce 8 false", "all_reduce 16 false", "all_gather 0 true", "broadcast 8 false", "broadcast 16 false"}; !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	var out strings.Builder
	tab := NewTable(&out, Header{Ranks: 2, Config: DefaultConfig()})
	for _, r := range rows {
		if err := tab.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "#\n# all_gather: unsupported: ") || strings.Count(out.String(), "Avg bus bandwidth") != 2 {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestMedianOf checks the median against sorting by hand, for odd and
// even counts, and that none is taken from no ops.
func TestMedianOf(t *testing.T) {
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{7}, 7},
		{[]time.Duration{9, 1}, 5},
		{[]time.Duration{30, 10, 20}, 20},
		{[]time.Duration{4, 100, 1, 3}, 3}, // (3 + 4) / 2, truncated
		{[]time.Duration{5, 5, 1000, 5, 1}, 5},
	} {
		if got := medianOf(slices.Clone(c.in)); got != c.want {
			t.Errorf("medianOf(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestBlockingRowsReportTheMedianOp runs blocking sweeps and expects each
// row's median op to be positive and, being one op's time, no longer
// than all the timed ops together; an issue-all sweep times no single op
// and reports no median.
func TestBlockingRowsReportTheMedianOp(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinBytes, cfg.MaxBytes, cfg.Factor = 8, 64<<10, 8
	cfg.Iters, cfg.Warmup = 9, 2
	for _, blocking := range []bool{true, false} {
		cfg.Blocking = blocking
		for _, ranks := range []int{1, 3} {
			rows, _ := sweep(t, ranks, cfg, nil)
			if len(rows) != 5 { // 8 B to 32 KiB
				t.Fatalf("blocking %v, %d ranks: %d rows, want 5", blocking, ranks, len(rows))
			}
			for _, r := range rows {
				switch {
				case !blocking && r.MedianUS != 0:
					t.Errorf("issue-all, %d ranks: %+v has a median", ranks, r)
				case blocking && (r.MedianUS <= 0 || r.MedianUS > r.TimeUS*float64(cfg.Iters)):
					t.Errorf("blocking, %d ranks: median %v µs against a mean of %v µs over %d ops", ranks, r.MedianUS, r.TimeUS, cfg.Iters)
				}
			}
		}
	}
}
