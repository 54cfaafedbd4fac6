package rma

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport/tcp"
)

// networks are what the in-process tests run over: the in-process
// transport, and loopback TCP, whose windows are reached through frames
// as between processes.
func networks() map[string][]gocomms.Option {
	return map[string][]gocomms.Option{"inproc": nil, "tcp": {gocomms.WithNetwork(tcp.New())}}
}

// TestRunSweep: every op at every size, checked, on 2 ranks and on 3
// (rank 2 idles): every rank gets the same rows, in sweep order, and none
// has a wrong byte or value.
func TestRunSweep(t *testing.T) {
	for name, opts := range networks() {
		for _, ranks := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/ranks=%d", name, ranks), func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.MinBytes, cfg.MaxBytes, cfg.Factor = 1, 1<<20, 32
				cfg.Iters, cfg.Warmup = 20, 2
				cfg.Volume = 4 << 20 // 1 MiB runs 4
				rows := make([][]Result, ranks)
				var mu sync.Mutex
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				err := gocomms.RunLocal(ctx, ranks, func(ctx context.Context, c *gocomms.Comm) error {
					wrong, err := Run(ctx, c, cfg, func(r Result) error {
						mu.Lock()
						defer mu.Unlock()
						rows[c.Rank()] = append(rows[c.Rank()], r)
						return nil
					})
					if err == nil && wrong != 0 {
						err = fmt.Errorf("rank %d: %d wrong", c.Rank(), wrong)
					}
					return err
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, o := range Ops {
					for _, s := range cfg.Sizes(o) {
						n, _ := cfg.Counts(s)
						want = append(want, fmt.Sprintf("%v %d %d", o, s, n))
					}
				}
				for r := range ranks {
					var got []string
					for _, row := range rows[r] {
						got = append(got, fmt.Sprintf("%v %d %d", row.Op, row.Bytes, row.Iters))
						if !row.Checked || row.Wrong != 0 || row.TimeUS <= 0 || row.GBps <= 0 || row.Ranks != ranks {
							t.Errorf("rank %d: row %+v", r, row)
						}
					}
					if !slices.Equal(got, want) {
						t.Errorf("rank %d's rows %v, want %v", r, got, want)
					}
					if r > 0 && !slices.Equal(rows[r], rows[0]) {
						t.Errorf("rank %d's rows differ from rank 0's:\n%v\n%v", r, rows[r], rows[0])
					}
				}
			})
		}
	}
}

// TestRunUnchecked: without Check, rows say so and count nothing.
func TestRunUnchecked(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinBytes, cfg.MaxBytes, cfg.Iters, cfg.Warmup, cfg.Check = 64, 64, 3, 0, false
	var rows []Result
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		_, err := Run(ctx, c, cfg, func(r Result) error {
			if c.Rank() == 0 {
				rows = append(rows, r)
			}
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(Ops) {
		t.Fatalf("%d rows, want one per op", len(rows))
	}
	for _, r := range rows {
		if r.Checked || r.Wrong != 0 {
			t.Errorf("row %+v", r)
		}
	}
}

// TestRunStarted: the hook sees the window before the first row, on
// every rank, and an error from it ends the sweep.
func TestRunStarted(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ops, cfg.MinBytes, cfg.MaxBytes, cfg.Iters, cfg.Warmup = []Op{Get}, 8, 8, 1, 0
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		cfg := cfg
		started := false
		cfg.Started = func(a gocomms.AccessType) error {
			started = true
			if a != gocomms.AccessUnified {
				return fmt.Errorf("in-process ranks reach each other's windows %v", a)
			}
			return nil
		}
		_, err := Run(ctx, c, cfg, func(Result) error {
			if !started {
				return fmt.Errorf("a row before the window")
			}
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRunNeedsTwoRanks(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 1, func(ctx context.Context, c *gocomms.Comm) error {
		_, err := Run(ctx, c, DefaultConfig(), func(Result) error { return nil })
		return err
	})
	if err == nil {
		t.Fatal("one rank: no error")
	}
}
