package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gocomms/gocomms"
)

// demoCount is the elements per rank each demo collective moves.
const demoCount = 1 << 16

// A demoOp runs one collective on c and checks its result against a
// reference computed from every rank's input: rank r's element i is
// input(r, i).
type demoOp struct {
	name string
	run  func(ctx context.Context, c *gocomms.Comm) error
}

func input(r, i int) float32 { return float32((r+1)*1000 + i%997) }

func demoOps(n int) []demoOp {
	seq := func(r, count int) []float32 {
		s := make([]float32, count)
		for i := range s {
			s[i] = input(r, i)
		}
		return s
	}
	want := func(got []float32, f func(i int) float32) error {
		for i, g := range got {
			if w := f(i); g != w {
				return fmt.Errorf("element %d = %v, want %v", i, g, w)
			}
		}
		return nil
	}
	sumAll := func(i int) float32 {
		var s float32
		for q := range n {
			s += input(q, i)
		}
		return s
	}
	root := n - 1
	return []demoOp{
		{"all_reduce", func(ctx context.Context, c *gocomms.Comm) error {
			d := seq(c.Rank(), demoCount)
			if err := c.AllReduce(ctx, gocomms.FromSlice(d), gocomms.Sum); err != nil {
				return err
			}
			return want(d, sumAll)
		}},
		{"reduce", func(ctx context.Context, c *gocomms.Comm) error {
			d := seq(c.Rank(), demoCount)
			if err := c.Reduce(ctx, gocomms.FromSlice(d), root, gocomms.Sum); err != nil {
				return err
			}
			if c.Rank() != root {
				return want(d, func(i int) float32 { return input(c.Rank(), i) })
			}
			return want(d, sumAll)
		}},
		{"broadcast", func(ctx context.Context, c *gocomms.Comm) error {
			d := seq(c.Rank(), demoCount)
			if err := c.Broadcast(ctx, gocomms.FromSlice(d), root); err != nil {
				return err
			}
			return want(d, func(i int) float32 { return input(root, i) })
		}},
		{"all_gather_single", func(ctx context.Context, c *gocomms.Comm) error {
			out := make([]float32, n*demoCount)
			if err := c.AllGatherSingle(ctx, gocomms.FromSlice(out), gocomms.FromSlice(seq(c.Rank(), demoCount))); err != nil {
				return err
			}
			return want(out, func(i int) float32 { return input(i/demoCount, i%demoCount) })
		}},
		{"reduce_scatter_single", func(ctx context.Context, c *gocomms.Comm) error {
			out := make([]float32, demoCount)
			if err := c.ReduceScatterSingle(ctx, gocomms.FromSlice(out), gocomms.FromSlice(seq(c.Rank(), n*demoCount)), gocomms.Sum); err != nil {
				return err
			}
			return want(out, func(i int) float32 { return sumAll(c.Rank()*demoCount + i) })
		}},
		{"all_to_all_single", func(ctx context.Context, c *gocomms.Comm) error {
			out := make([]float32, n*demoCount)
			if err := c.AllToAllSingle(ctx, gocomms.FromSlice(out), gocomms.FromSlice(seq(c.Rank(), n*demoCount))); err != nil {
				return err
			}
			return want(out, func(i int) float32 { return input(i/demoCount, c.Rank()*demoCount+i%demoCount) })
		}},
		{"gather", func(ctx context.Context, c *gocomms.Comm) error {
			var outs []*gocomms.Tensor
			bufs := make([][]float32, n)
			if c.Rank() == root {
				for q := range bufs {
					bufs[q] = make([]float32, demoCount)
					outs = append(outs, gocomms.FromSlice(bufs[q]))
				}
			}
			if err := c.Gather(ctx, outs, gocomms.FromSlice(seq(c.Rank(), demoCount)), root); err != nil {
				return err
			}
			for q, b := range bufs {
				if err := want(b, func(i int) float32 { return input(q, i) }); c.Rank() == root && err != nil {
					return err
				}
			}
			return nil
		}},
		{"scatter", func(ctx context.Context, c *gocomms.Comm) error {
			var ins []*gocomms.Tensor
			if c.Rank() == root {
				for q := range n {
					ins = append(ins, gocomms.FromSlice(seq(q, demoCount)))
				}
			}
			out := make([]float32, demoCount)
			if err := c.Scatter(ctx, gocomms.FromSlice(out), ins, root); err != nil {
				return err
			}
			return want(out, func(i int) float32 { return input(c.Rank(), i) })
		}},
		{"send/recv ring", func(ctx context.Context, c *gocomms.Comm) error {
			if n == 1 {
				return nil
			}
			r := c.Rank()
			got := make([]float32, demoCount)
			b := c.NewBatch().Send(gocomms.FromSlice(seq(r, demoCount)), (r+1)%n).Recv(gocomms.FromSlice(got), (r+n-1)%n)
			if err := b.Issue(ctx); err != nil {
				return err
			}
			return want(got, func(i int) float32 { return input((r+n-1)%n, i) })
		}},
		{"barrier", func(ctx context.Context, c *gocomms.Comm) error { return c.Barrier(ctx) }},
	}
}

// demo runs every demo op on n in-process ranks and prints one row per op.
func demo(ctx context.Context, n int, logger *slog.Logger, out io.Writer) error {
	ops := demoOps(n)
	type result struct {
		elapsed time.Duration
		errs    []error
	}
	results := make([]result, len(ops))
	var mu sync.Mutex
	err := gocomms.RunLocal(ctx, n, func(ctx context.Context, c *gocomms.Comm) error {
		for i, op := range ops {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			start := time.Now()
			err := op.run(ctx, c)
			elapsed := time.Since(start)
			mu.Lock()
			results[i].elapsed = max(results[i].elapsed, elapsed)
			if err != nil {
				results[i].errs = append(results[i].errs, fmt.Errorf("rank %d: %w", c.Rank(), err))
			}
			mu.Unlock()
		}
		return nil
	}, gocomms.WithLogger(logger))

	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "op\tranks\telements/rank\tdtype\ttime (with check)\tresult\t\n")
	wrong := 0
	for i, op := range ops {
		status := "ok"
		if len(results[i].errs) > 0 {
			status = "WRONG"
			wrong++
		}
		fmt.Fprintf(w, "%s\t%d\t%d\tfloat32\t%v\t%s\t\n", op.name, n, demoCount, results[i].elapsed.Round(time.Microsecond), status)
	}
	w.Flush()
	var all []error
	for _, r := range results {
		all = append(all, r.errs...)
	}
	if err != nil {
		all = append(all, err)
	}
	if len(all) > 0 {
		return fmt.Errorf("%d of %d operations wrong: %w", wrong, len(ops), errors.Join(all...))
	}
	fmt.Fprintf(out, "all %d operations correct on %d ranks\n", len(ops), n)
	return nil
}

// demoCommand runs `commnode demo`.
func demoCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ranks := fs.Int("ranks", 4, "in-process ranks")
	timeout := fs.Duration("timeout", time.Minute, "bound on the whole demo")
	verbose := fs.Bool("v", false, "log engine events to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := demo(ctx, *ranks, newLogger(stderr, *verbose), stdout); err != nil {
		fmt.Fprintln(stderr, "commnode demo:", err)
		return 1
	}
	return 0
}
