package rdma

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
)

var benchSizes = []int{8, 64 << 10, 1 << 20, 64 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkWrite measures Write from one goroutine: each returns once its
// payload is in the peer's memory. docs/RDMA.md has the figures:
//
//	go test -run XXX -bench . -benchmem -count 5 ./rdma/
func BenchmarkWrite(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			a, _ := newPair(b)
			src := register(b, make([]byte, n))
			dst := register(b, make([]byte, n))
			v := view(b, src, 0, n)
			ctx := context.Background()
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := a.Write(ctx, v, dst.Remote(), false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead measures Read from one goroutine.
func BenchmarkRead(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			a, _ := newPair(b)
			src := register(b, make([]byte, n))
			dst := register(b, make([]byte, n))
			v := mutableView(b, dst, 0, n)
			ctx := context.Background()
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := a.Read(ctx, v, src.Remote()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFetchAdd measures the round trip of an 8-byte atomic.
func BenchmarkFetchAdd(b *testing.B) {
	a, _ := newPair(b)
	m := register(b, alignedBytes(8))
	ctx := context.Background()
	for b.Loop() {
		if _, err := a.FetchAdd(ctx, m.Remote(), 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTCPBaseline is the ceiling the benchmarks above are measured
// against: the same messages over one loopback TCP connection, a 56-byte
// header and the payload in one writev, read by a goroutine into its own
// buffer and answered with one byte, with none of the transport's
// checks, registry or bookkeeping. The message's shape matters: sending
// the payload bare, read with one ReadFull, is up to two times slower at
// 64 KiB and 1 MiB here.
func BenchmarkTCPBaseline(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				c.(*net.TCPConn).SetNoDelay(true)
				dst := make([]byte, n)
				var hdr [reqHeaderLen]byte
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					if _, err := io.ReadFull(c, dst); err != nil {
						return
					}
					if _, err := c.Write(dst[:1]); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetNoDelay(true)
			src := make([]byte, n)
			var ack [1]byte
			var hdr [reqHeaderLen]byte
			b.SetBytes(int64(n))
			for b.Loop() {
				bufs := net.Buffers{hdr[:], src}
				if _, err := bufs.WriteTo(c); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, ack[:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
