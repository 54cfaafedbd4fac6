package tcp_test

import (
	"fmt"
	"testing"

	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// Benchmarks run over loopback; docs/transport-tcp.md records the figures
// and the command that reproduces them.

func BenchmarkPingPong(b *testing.B) {
	transporttest.BenchPingPong(b, tcp.New(tcp.WithListenHost("127.0.0.1")))
}

func BenchmarkStream(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 1 << 20, 64 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			transporttest.BenchStream(b, tcp.New(tcp.WithListenHost("127.0.0.1")), size)
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
