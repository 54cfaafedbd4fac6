package lazy_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
	"pgregory.net/rapid"
)

// send is one step of a property run: from sends count frames to to, on
// lane, the goroutine that issues it.
type send struct {
	from, to, count, lane int
}

// TestProperty: random groups of 2 to 6 members over inproc run random
// sends from up to three goroutines each, then a random subset of members
// closes at once, in random order, without waiting for delivery. Every
// member still open receives every frame sent to it exactly once, in
// each sending goroutine's order, whatever dialled whom; a closed member
// receives, per goroutine, a prefix of what was sent to it. Nothing is
// left running once every member is closed.
func TestProperty(t *testing.T) {
	leaktest.Check(t)
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 6).Draw(rt, "members")
		lanes := rapid.IntRange(1, 3).Draw(rt, "lanes")
		ops := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) send {
			from := rapid.IntRange(0, n-1).Draw(rt, "from")
			to := rapid.IntRange(0, n-2).Draw(rt, "to")
			if to >= from {
				to++
			}
			return send{
				from:  from,
				to:    to,
				count: rapid.IntRange(1, 5).Draw(rt, "count"),
				lane:  rapid.IntRange(0, lanes-1).Draw(rt, "lane"),
			}
		}), 1, 40).Draw(rt, "sends")
		closing := rapid.SliceOfNDistinct(rapid.IntRange(0, n-1), 0, n, rapid.ID).Draw(rt, "closing early, in order")

		c := newCluster(rt, transport.NewInproc(), n, clusterOptions{})
		defer c.closeAll()

		// want[to][from][lane] counts the frames sent; seq numbers run per
		// stream, which is what the order check follows.
		want := make([][]map[int]int, n)
		for i := range want {
			want[i] = make([]map[int]int, n)
			for j := range want[i] {
				want[i][j] = make(map[int]int)
			}
		}
		byLane := make([][]send, lanes)
		for _, op := range ops {
			byLane[op.lane] = append(byLane[op.lane], op)
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(ops)*5)
		var mu sync.Mutex // orders seq numbering per stream with the Sends
		for _, lane := range byLane {
			wg.Go(func() {
				for _, op := range lane {
					for range op.count {
						mu.Lock()
						seq := want[op.to][op.from][op.lane]
						want[op.to][op.from][op.lane]++
						mu.Unlock()
						if err := c.conns[op.from][op.to].Send(frame(op.from, op.to, op.lane, seq)); err != nil {
							errs <- fmt.Errorf("member %d: Send to %d: %w", op.from, op.to, err)
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			rt.Fatalf("%v", err)
		}
		closed := make([]bool, n)
		for _, i := range closing {
			c.groups[i].Close()
			closed[i] = true
		}

		for to := range n {
			for from := range n {
				if from == to {
					continue
				}
				r := c.recs[to][from]
				total := 0
				for _, k := range want[to][from] {
					total += k
				}
				if !closed[to] {
					checkFrames(rt, r.WaitFrames(rt, total), from, to, want[to][from])
					continue
				}
				got, _ := r.Snapshot()
				checkPrefix(rt, got, from, to, want[to][from])
			}
		}
		c.check()
	})
}

// checkPrefix checks that got holds, per lane, frames 0..k-1 in order for
// some k no larger than what was sent.
func checkPrefix(t tb, got []transport.Frame, from, to int, sent map[int]int) {
	t.Helper()
	have := make(map[int]int)
	for _, f := range got {
		have[int(f.Header.Tag)]++
	}
	for lane, k := range have {
		if k > sent[lane] {
			t.Fatalf("member %d got %d frames from %d on lane %d, which sent %d", to, k, from, lane, sent[lane])
		}
	}
	checkFrames(t, got, from, to, have)
}
