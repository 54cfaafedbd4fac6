//go:build linux

package nvl_test

import (
	"testing"

	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network { return nvl.New() })
}

// TestConformanceThroughRing runs the suite again with every payload
// through the smallest ring and no spinning: payloads larger than the
// ring, wrap-around, and sleeping on the doorbell at every turn.
func TestConformanceThroughRing(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network {
		return nvl.New(nvl.WithRingSize(nvl.MinRing), nvl.WithByAddress(0), nvl.WithSpin(0))
	})
}

// TestConformanceByAddress sends every payload from one byte up by
// address.
func TestConformanceByAddress(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network {
		return nvl.New(nvl.WithByAddress(1))
	})
}
