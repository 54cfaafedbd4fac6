package agree

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// cluster runs nodes over a network that delivers messages in an order
// the test draws, crashes ranks at drawn moments and tells every survivor
// of each crash, later, as links that fail would.
type cluster struct {
	nodes   []*Node
	flags   []uint64
	crashed []bool
	told    [][]bool // told[r][c]: survivor r knows c crashed
	queue   []Msg
	sent    int
	decided []*Value // what each node decided, crashed ones too
}

func newCluster(t *rapid.T, size int) *cluster {
	c := &cluster{nodes: make([]*Node, size), flags: make([]uint64, size), crashed: make([]bool, size),
		told: make([][]bool, size), decided: make([]*Value, size)}
	for r := range size {
		c.flags[r] = rapid.Uint64().Draw(t, "flags")
		c.told[r] = make([]bool, size)
	}
	for r := range size {
		n, out := New(r, size, c.flags[r], nil)
		c.nodes[r] = n
		c.send(out)
	}
	return c
}

func (c *cluster) send(out []Msg) {
	c.sent += len(out)
	c.queue = append(c.queue, out...)
}

func (c *cluster) note(r int) {
	if v, ok := c.nodes[r].Decided(); ok && c.decided[r] == nil {
		c.decided[r] = &v
	}
}

// step does one drawn thing: deliver a message, crash a rank, or tell a
// survivor of a crash. It reports false once nothing is left to do.
func (c *cluster) step(t *rapid.T, crashes *int) bool {
	var tell [][2]int
	for r := range c.nodes {
		for x := range c.nodes {
			if !c.crashed[r] && c.crashed[x] && !c.told[r][x] {
				tell = append(tell, [2]int{r, x})
			}
		}
	}
	choices := len(c.queue) + len(tell)
	if *crashes > 0 {
		choices++
	}
	if choices == 0 {
		return false
	}
	i := rapid.IntRange(0, choices-1).Draw(t, "step")
	switch {
	case i < len(c.queue):
		m := c.queue[i]
		c.queue = slices.Delete(c.queue, i, i+1)
		if !c.crashed[m.To] && !c.crashed[m.From] {
			c.send(c.nodes[m.To].Receive(m))
			c.note(m.To)
		}
	case i < len(c.queue)+len(tell):
		rx := tell[i-len(c.queue)]
		c.told[rx[0]][rx[1]] = true
		c.send(c.nodes[rx[0]].Fail(rx[1]))
		c.note(rx[0])
	default:
		var live []int
		for r, dead := range c.crashed {
			if !dead {
				live = append(live, r)
			}
		}
		if len(live) > 1 {
			victim := rapid.SampledFrom(live).Draw(t, "victim")
			c.crashed[victim] = true
		}
		*crashes--
	}
	return true
}

// TestAgreement: whatever the order of messages and whichever ranks crash
// when, coordinators included, every survivor decides; every rank that
// decides, survivor or not, decides the same value; its flags are the AND
// of a set of proposals that holds every survivor's; and its failed ranks
// are crashed ones, all crashed before it.
func TestAgreement(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 9).Draw(t, "size")
		crashes := rapid.IntRange(0, size-1).Draw(t, "crashes")
		c := newCluster(t, size)
		for steps := 0; c.step(t, &crashes); steps++ {
			if steps > 100000 {
				t.Fatal("no end after 100,000 steps")
			}
		}
		var first *Value
		all, survivors := ^uint64(0), ^uint64(0)
		for r := range size {
			all &= c.flags[r]
			if !c.crashed[r] {
				survivors &= c.flags[r]
				if c.decided[r] == nil {
					t.Fatalf("survivor %d did not decide (crashed %v)", r, c.crashed)
				}
			}
		}
		for r, v := range c.decided {
			if v == nil {
				continue
			}
			if first == nil {
				first = v
			}
			if v.Flags != first.Flags || !slices.Equal(v.Failed, first.Failed) {
				t.Fatalf("rank %d decided %+v, another %+v", r, *v, *first)
			}
		}
		if first == nil {
			return // every rank crashed before any decided: only possible with none left
		}
		if first.Flags&^survivors != 0 || all&^first.Flags != 0 {
			t.Fatalf("decided flags %x: not within the survivors' AND %x and everyone's %x", first.Flags, survivors, all)
		}
		for _, r := range first.Failed {
			if !c.crashed[r] {
				t.Fatalf("decided that rank %d failed, but it did not (crashed %v)", r, c.crashed)
			}
		}
		if !slices.IsSorted(first.Failed) {
			t.Fatalf("failed ranks %v not sorted", first.Failed)
		}
	})
}

// TestRoundCost: with no failure, agreement among n ranks takes one round
// of 5 messages per rank.
func TestRoundCost(t *testing.T) {
	for _, n := range []int{1, 2, 7, 64} {
		sent := 0
		nodes := make([]*Node, n)
		var queue []Msg
		for r := range n {
			var out []Msg
			nodes[r], out = New(r, n, uint64(r+1), nil)
			queue = append(queue, out...)
		}
		for len(queue) > 0 {
			m := queue[0]
			queue = queue[1:]
			sent++
			queue = append(queue, nodes[m.To].Receive(m)...)
		}
		if sent != 5*n {
			t.Errorf("%d ranks: %d messages, want %d", n, sent, 5*n)
		}
		for r, node := range nodes {
			if v, ok := node.Decided(); !ok || v.Flags != 0 && n > 1 || len(v.Failed) != 0 {
				t.Errorf("%d ranks: rank %d decided %+v, %v", n, r, v, ok)
			}
		}
	}
}
