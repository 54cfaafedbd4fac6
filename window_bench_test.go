package gocomms_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport/tcp"
)

// BenchmarkWindow measures one-sided operations from rank 0 on rank 1's
// window, 2 ranks in this process, as bench/peers/mpi_rma.c measures Open
// MPI's: put with a flush after each (remote completion), puts with one
// flush after all (pipelined), get, and 8-byte fetch-and-add, over loopback
// TCP and shared memory.
func BenchmarkWindow(b *testing.B) {
	nets := map[string]gocomms.Option{"tcp": gocomms.WithNetwork(tcp.New())}
	if nvl.Host() != "" {
		nets["shm"] = gocomms.WithNetwork(nvl.New())
	}
	for name, net := range nets {
		for _, op := range []string{"put", "put_pipelined", "get"} {
			for _, size := range []int{8, 64 << 10, 1 << 20, 64 << 20} {
				b.Run(fmt.Sprintf("%s/op=%s/bytes=%d", name, op, size), func(b *testing.B) {
					benchWindow(b, net, size, op)
				})
			}
		}
		b.Run(name+"/op=fetch_and_op/bytes=8", func(b *testing.B) { benchWindow(b, net, 8, "fetch_and_op") })
	}
}

func benchWindow(b *testing.B, net gocomms.Option, size int, op string) {
	b.SetBytes(int64(size))
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		win, err := c.NewWindow(ctx, size)
		if err != nil {
			return err
		}
		buf := gocomms.FromSlice(make([]byte, size))
		one, old := gocomms.FromSlice([]int64{1}), gocomms.FromSlice([]int64{0})
		step := func() error {
			switch op {
			case "put":
				if err := win.Put(ctx, buf, 1, 0); err != nil {
					return err
				}
				return win.Flush(ctx, 1)
			case "put_pipelined":
				return win.Put(ctx, buf, 1, 0)
			case "get":
				return win.Get(ctx, buf, 1, 0)
			default:
				return win.FetchAndOp(ctx, one, old, 1, 0, gocomms.Sum)
			}
		}
		if c.Rank() == 0 {
			for range 3 {
				if err := step(); err != nil {
					return err
				}
			}
			b.ResetTimer()
			for range b.N {
				if err := step(); err != nil {
					return err
				}
			}
			if err := win.FlushAll(ctx); err != nil {
				return err
			}
			b.StopTimer()
		}
		return win.Close(ctx)
	}, net)
	if err != nil {
		b.Fatal(err)
	}
}
