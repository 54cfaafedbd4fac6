package tcp_test

import (
	"net"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network { return tcp.New() })
}

// TestConformanceTuned runs the suite again with every socket option away
// from its default: bound to loopback only, as single-machine jobs are,
// with fixed socket buffers, no keepalive, and payloads checksummed
// within the host too.
func TestConformanceTuned(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network {
		return tcp.New(
			tcp.WithListenHost("127.0.0.1"),
			tcp.WithSocketBuffers(256<<10, 256<<10),
			tcp.WithKeepAlive(net.KeepAliveConfig{}),
			tcp.WithPayloadChecksums(tcp.ChecksumsAlways),
		)
	})
}
