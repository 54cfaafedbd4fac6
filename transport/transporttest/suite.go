package transporttest

import (
	"testing"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
)

// Run runs the conformance suite against the networks newNetwork returns,
// one fresh network per subtest. Subtests run one after another, each
// checking that it leaves no goroutine behind; newNetwork may register
// cleanups on t to stop the network's own goroutines.
func Run(t *testing.T, newNetwork func(t *testing.T) transport.Network) {
	tests := []struct {
		name string
		run  func(t *testing.T, nw transport.Network)
	}{
		// Connection setup.
		{"DialAccept", testDialAccept},
		{"HelloLimit", testHelloLimit},
		{"ListenTaken", testListenTaken},
		{"DialNothing", testDialNothing},
		{"AcceptCancelled", testAcceptCancelled},
		{"ListenerClose", testListenerClose},
		{"ListenerCloseDropsBacklog", testListenerCloseDropsBacklog},
		// Data.
		{"FIFO", testFIFO},
		{"BothDirections", testBothDirections},
		{"Payloads", testPayloads},
		{"LentPayloads", testLentPayloads},
		{"ConcurrentSenders", testConcurrentSenders},
		{"ManyConns", testManyConns},
		{"PingPong", testPingPong},
		{"StartAfterSend", testStartAfterSend},
		{"StartDuringSend", testStartDuringSend},
		// Teardown.
		{"CloseNotifiesPeer", testCloseNotifiesPeer},
		{"CloseBeforeStart", testCloseBeforeStart},
		{"CloseFromHandler", testCloseFromHandler},
		{"SendAfterClose", testSendAfterClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaktest.Check(t)
			tt.run(t, newNetwork(t))
		})
	}
}
