package gocomms_test

import (
	"context"
	"fmt"
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
