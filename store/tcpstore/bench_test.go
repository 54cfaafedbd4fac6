package tcpstore_test

import (
	"context"
	"testing"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// BenchmarkSetGet is one Set and one Get of a 64-byte value over loopback:
// SET is sent without a reply, Get is a WAIT and a GET round trip.
func BenchmarkSetGet(b *testing.B) {
	for _, v := range []tcpstore.Version{tcpstore.Version1, tcpstore.Version2} {
		b.Run(v.String(), func(b *testing.B) {
			srv := startServer(b)
			c := dial(b, srv.Addr().String(), tcpstore.WithVersion(v))
			ctx := context.Background()
			value := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Set(ctx, "key", value); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Get(ctx, "key"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAddParallel is one Add round trip, from many goroutines at once.
func BenchmarkAddParallel(b *testing.B) {
	srv := startServer(b)
	c := dial(b, srv.Addr().String())
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Add(ctx, "counter", 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
