package transport_test

import (
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/transporttest"
)

func BenchmarkInprocPingPong(b *testing.B) {
	transporttest.BenchPingPong(b, transport.NewInproc())
}

func BenchmarkInprocStream(b *testing.B) {
	transporttest.BenchStream(b, transport.NewInproc(), 1<<20)
}
