//go:build linux

package nvl_test

import (
	"fmt"
	"testing"

	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// Both ends run in this process here, which is the same code path as
// between processes; docs/PERFORMANCE.md records figures between
// processes.

func BenchmarkPingPong(b *testing.B) {
	transporttest.BenchPingPong(b, nvl.New())
}

func BenchmarkStream(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 1 << 20, 64 << 20} {
		for _, by := range []int{0, 64 << 10} {
			b.Run(fmt.Sprintf("%dB/byAddressFrom=%d", size, by), func(b *testing.B) {
				transporttest.BenchStream(b, nvl.New(nvl.WithByAddress(by)), size)
			})
		}
	}
}
