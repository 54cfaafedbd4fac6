package gocomms_test

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/transport/tcp"
)

// reduceThenBroadcast is a new all-reduce: every rank sends its tensor to
// rank 0 in chunks, rank 0 adds them up in rank order, and sends the total
// back. Dependencies between steps follow from the regions they touch.
func reduceThenBroadcast(b *algorithms.Builder, s *algorithms.Spec) {
	n, c := s.Counts[0], s.ChunkElems()
	out := algorithms.Region{Buf: algorithms.Output, Len: n}
	in := algorithms.Region{Buf: algorithms.Input, Len: n}
	if s.InPlace { // the input is already in out
		in = out
	}
	for off := 0; off < n; off += c {
		chunk := func(r algorithms.Region) algorithms.Region {
			r.Off, r.Len = off, min(c, n-off)
			return r
		}
		if s.Rank != 0 {
			b.Send(0, chunk(in))
			b.Recv(0, chunk(out))
			continue
		}
		if in != out {
			b.Copy(chunk(out), chunk(in))
		}
		for q := 1; q < s.Size; q++ {
			b.RecvReduce(q, chunk(out), chunk(out))
		}
		for q := 1; q < s.Size; q++ {
			b.Send(q, chunk(out))
		}
	}
}

// Example_registerAllReduce writes an all-reduce of its own, registers it
// in a registry of its own, proves it for 1 to 8 ranks with the checker,
// and runs it across ranks in one process and over TCP, with no change to
// the engine. gocomms.RegisterAlgorithm would offer it to every
// communicator of the process instead.
func Example_registerAllReduce() {
	reg := algorithms.NewRegistry()
	if err := reg.Register(algorithms.AllReduce, "reduce_then_broadcast", reduceThenBroadcast); err != nil {
		fmt.Println(err)
		return
	}
	for p := 1; p <= 8; p++ {
		for _, n := range []int{0, 1, 10} {
			spec := algorithms.Spec{Kind: algorithms.AllReduce, Size: p, Counts: []int{n}, ElemSize: 4,
				ChunkBytes: 12, InPlace: true, Algorithm: "reduce_then_broadcast", Registry: reg}
			if err := algorithms.Check(algorithms.EveryRank(spec), 1); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	run := func(opts ...gocomms.Option) {
		err := gocomms.RunLocal(context.Background(), 4, func(ctx context.Context, c *gocomms.Comm) error {
			data := []float32{float32(c.Rank()), 1}
			if err := c.AllReduce(ctx, gocomms.FromSlice(data), gocomms.Sum); err != nil {
				return err
			}
			if c.Rank() == 0 {
				fmt.Println(data)
			}
			return nil
		}, append(opts, gocomms.WithAlgorithms(reg), gocomms.WithAlgorithm(gocomms.OpAllReduce, "reduce_then_broadcast"))...)
		if err != nil {
			fmt.Println(err)
		}
	}
	run()                               // in one process
	run(gocomms.WithNetwork(tcp.New())) // over loopback TCP
	// Output:
	// [6 4]
	// [6 4]
}
