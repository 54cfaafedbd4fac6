package lazy_test

import (
	"testing"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
)

// TestTieBreak plays both orders in which two crossing dials can reach
// their acceptors. The lower member's dial wins either way: the higher
// one's is refused with the crossed answer when it arrives first, and
// dropped by its own dialer when it arrives second. One connection
// carries the frames both ways.
func TestTieBreak(t *testing.T) {
	for _, first := range []string{"higher", "lower"} {
		t.Run(first+" first", func(t *testing.T) {
			forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
				leaktest.Check(t)
				nw := newProbe(newNetwork())
				gt := newGate()
				nw.gate = gt.wait
				c := newCluster(t, nw, 2, clusterOptions{})
				gt.hold(c.addrs[0])
				gt.hold(c.addrs[1])
				c.conns[0][1].Send(frame(0, 1, 0, 0))
				c.conns[1][0].Send(frame(1, 0, 0, 0))
				gt.waitArrived(t, c.addrs[0])
				gt.waitArrived(t, c.addrs[1])

				if first == "higher" {
					gt.release(c.addrs[0])
					higher := nw.dialed(t, 1, c.addrs[0])
					eventually(t, "the crossed answer", func() bool { return higher.answers.Load() == 1<<2 })
					gt.release(c.addrs[1])
				} else {
					gt.release(c.addrs[1])
					lower := nw.dialed(t, 0, c.addrs[1])
					eventually(t, "the welcome", func() bool { return lower.welcomed.Load() })
					gt.release(c.addrs[0])
				}
				c.conns[0][1].Send(frame(0, 1, 0, 1))
				c.conns[1][0].Send(frame(1, 0, 0, 1))
				checkFrames(t, c.recs[1][0].WaitFrames(t, 2), 0, 1, map[int]int{0: 2})
				checkFrames(t, c.recs[0][1].WaitFrames(t, 2), 1, 0, map[int]int{0: 2})

				if d := nw.dials.Load(); d != 2 {
					t.Errorf("%d dials, want 2", d)
				}
				if carrying, welcomed := nw.between(c, 0, 1); carrying != 1 || welcomed != 1 {
					t.Errorf("%d connections carried data and %d were welcomed, want 1 and 1", carrying, welcomed)
				}
				if w := nw.dialed(t, 0, c.addrs[1]); !w.welcomed.Load() || w.data.Load() != 4 {
					t.Errorf("the lower member's dial: welcomed %v, %d data frames; want true, 4", w.welcomed.Load(), w.data.Load())
				}
				for i, j := range []int{1, 0} {
					if got := c.connects[i][j].Load(); got != 1 {
						t.Errorf("member %d: OnConnect called %d times, want 1", i, got)
					}
				}
				c.check()
			})
		})
	}
}
