package simulation

import (
	"testing"
	"time"
)

// TestConnectedOutlivesForgottenPairs: with released links the network
// forgets a pair once both its ends closed, but the fault checker still
// asks whether a rank that a fault on its links names ever had a
// connection with the rank an error names: the engine blames a broken
// connection on the peer across it.
func TestConnectedOutlivesForgottenPairs(t *testing.T) {
	faults := Plan{{Kind: Delay, Ranks: []int{3}, At: 0, For: time.Second, By: time.Microsecond}}
	n := newNetwork(NewLoop(1), DGXH100(1), 8, faults, 0)
	n.forgets = true
	n.comms = []*fabricComm{{joined: make([]member, 8)}}
	for _, peer := range []int{5, 1} {
		c, err := n.connect(0, 3, peer)
		if err != nil {
			t.Fatal(err)
		}
		n.forget(c.(*conn))
	}
	if len(n.pairs) != 0 {
		t.Fatalf("%d pairs kept after both were forgotten", len(n.pairs))
	}
	for peer, want := range map[int]bool{5: true, 1: true, 6: false} {
		if got := n.connected(3, peer); got != want {
			t.Errorf("connected(3, %d) = %v, want %v", peer, got, want)
		}
	}
}
