package lazy_test

import (
	"sync"
	"testing"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
)

// TestSimultaneous: every member of a group of 2 to 6 sends to every other
// at the same moment, so that most pairs dial each other at once. Every
// frame arrives exactly once and in order, and each pair ends with one
// connection that both sides use.
func TestSimultaneous(t *testing.T) {
	for _, tc := range []struct {
		network int
		rounds  int
	}{{0, 200}, {1, 20}} {
		nw := networks[tc.network]
		t.Run(nw.name, func(t *testing.T) {
			leaktest.Check(t)
			for round := range tc.rounds {
				simultaneous(t, nw.new(), 2+round%5, 1+round%3)
				if t.Failed() {
					t.Fatalf("round %d failed", round)
				}
			}
		})
	}
}

// simultaneous runs one round: n members, each sending k frames to each
// peer from a goroutine of its own per peer.
func simultaneous(t *testing.T, inner transport.Network, n, k int) {
	nw := newProbe(inner)
	c := newCluster(t, nw, n, clusterOptions{})
	defer c.closeAll()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			wg.Go(func() {
				<-start
				for s := range k {
					if err := c.conns[i][j].Send(frame(i, j, 0, s)); err != nil {
						t.Errorf("member %d: Send to %d: %v", i, j, err)
						return
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			checkFrames(t, c.recs[j][i].WaitFrames(t, k), i, j, map[int]int{0: k})
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !c.groups[i].Up(j) || !c.groups[j].Up(i) {
				t.Errorf("%d members: pair %d-%d: Up %v and %v", n, i, j, c.groups[i].Up(j), c.groups[j].Up(i))
			}
			if carrying, welcomed := nw.between(c, i, j); carrying != 1 || welcomed != 1 {
				t.Errorf("%d members: pair %d-%d: %d connections carried data and %d were welcomed, want 1 and 1", n, i, j, carrying, welcomed)
			}
			if a, b := c.connects[i][j].Load(), c.connects[j][i].Load(); a != 1 || b != 1 {
				t.Errorf("%d members: pair %d-%d: OnConnect called %d and %d times, want 1 and 1", n, i, j, a, b)
			}
		}
	}
	c.check()
}
