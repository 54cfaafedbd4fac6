package gocomms_test

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport/tcp"
)

// BenchmarkAllReduce measures in-process all-reduce of float32 sums as
// nccl-tests reports it: time per op (ns/op), algbw = bytes/time and
// busbw = algbw × 2(p-1)/p, and allocations per op summed over all ranks.
func BenchmarkAllReduce(b *testing.B) {
	for _, ranks := range []int{2, 4} {
		for _, size := range []int{8, 64 << 10, 1 << 20, 64 << 20} {
			b.Run(fmt.Sprintf("ranks=%d/bytes=%d", ranks, size), func(b *testing.B) {
				benchAllReduce(b, ranks, size)
			})
		}
	}
}

// BenchmarkAllReduceTCP is BenchmarkAllReduce with the ranks connected
// over loopback TCP instead of in-process queues.
func BenchmarkAllReduceTCP(b *testing.B) {
	for _, size := range []int{8, 1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("ranks=2/bytes=%d", size), func(b *testing.B) {
			benchAllReduce(b, 2, size, gocomms.WithNetwork(tcp.New()))
		})
	}
}

func benchAllReduce(b *testing.B, ranks, size int, opts ...gocomms.Option) {
	b.ReportAllocs()
	err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
		t := gocomms.FromSlice(make([]float32, size/4))
		for range 3 { // warm pools and schedules
			if err := c.AllReduce(ctx, t, gocomms.Sum); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for range b.N {
			if err := c.AllReduce(ctx, t, gocomms.Sum); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.StopTimer()
			sec := b.Elapsed().Seconds() / float64(b.N)
			algbw := float64(size) / sec / 1e9
			b.ReportMetric(algbw, "algbw_GB/s")
			b.ReportMetric(algbw*2*float64(ranks-1)/float64(ranks), "busbw_GB/s")
		}
		return nil
	}, opts...)
	if err != nil {
		b.Fatal(err)
	}
}

// TestSteadyCollectivesAllocateNothing: once warm, a blocking all-reduce,
// reduce or broadcast between in-process ranks allocates nothing, summed
// over the ranks, below and above the size from which sends lend their
// payload. The race detector's pools drop what they are given, so it is
// not measured there.
func TestSteadyCollectivesAllocateNothing(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's pools drop what they are given")
	}
	const runs = 200
	for _, size := range []int{8, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var allocs float64
			err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
				x := gocomms.FromSlice(make([]float32, size/4))
				ops := func() error {
					if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
						return err
					}
					if err := c.Reduce(ctx, x, 1, gocomms.Max); err != nil {
						return err
					}
					return c.Broadcast(ctx, x, 0)
				}
				// Warm plans, links and pools: a link keeps up to 64 small
				// frames until the peer acknowledges them.
				for range 100 {
					if err := ops(); err != nil {
						return err
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				var err error
				if c.Rank() == 0 {
					allocs = testing.AllocsPerRun(runs, func() {
						if e := ops(); e != nil && err == nil {
							err = e
						}
					})
				} else {
					for range runs + 1 { // AllocsPerRun runs once more, to warm up
						if err = ops(); err != nil {
							break
						}
					}
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("%v allocations per round of all-reduce, reduce and broadcast", allocs)
			}
		})
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
