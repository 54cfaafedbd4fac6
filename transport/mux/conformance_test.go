package mux_test

import (
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// Three comms share each connection, so that the suite's connections to
// one listener run over the same pair of muxes.
const commsPerConn = 3

func TestConformanceInproc(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Network {
		return newMuxNetwork(t, transport.NewInproc(), commsPerConn)
	})
}

func TestConformanceTCP(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Network {
		return newMuxNetwork(t, tcp.New(tcp.WithListenHost("127.0.0.1")), commsPerConn)
	})
}
