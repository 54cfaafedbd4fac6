package collective

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/commerr"
)

// A collective that times out waits for its direct peers, who may only be
// waiting for someone else. Before it fails, it asks the ranks it waits for
// how far they have got and follows those that are waiting in turn, so that
// the error names the ranks that never started the collective (as NCCL's
// fault analyzer does), or else those that gave up on it early (a rank
// whose clock runs fast times out on healthy peers), not merely a
// neighbour stuck behind them. A rank still in an earlier collective is
// followed into it: whom it waits for there holds both back.
//
// The probes go deep before wide, one at a time: the ranks an answer
// names are asked next, the first of them first. Every chain of ranks
// waiting for one another ends where the fault is, but a rank waits for
// every peer of its later steps too, and asking all of them at each hop
// spends the probes on the ranks around this one; a rank that never
// answers ends the search, and is named.
type probe struct {
	state      []probeState // by rank
	about      []uint64     // by rank: the collective it was asked about
	sent       int
	pending    int
	notReached []int // idle: they never called
	gaveUp     []int
	behind     []int       // still in an earlier collective
	left       []int       // their communicator broke
	accuser    int         // of the first rank that left: who found the failure
	todo       []probeTask // ranks to ask, the next one last
}

// probeTask is a rank to ask, and about which collective.
type probeTask struct {
	peer  int
	about uint64
}

const (
	// probeGrace bounds the wait for answers (or the operation's timeout,
	// when that is shorter): a rank that cannot answer is not named.
	probeGrace = time.Second
	// maxProbes bounds the probes one timeout sends, so that a ring of
	// 100,000 ranks timing out together stays linear in traffic.
	maxProbes = 64
	// probeWidth bounds the probes awaiting an answer at once.
	probeWidth = 1
)

type probeOver struct{}

type probeState uint8

const (
	unasked probeState = iota
	asked
	answered
)

func (c *runner) startProbe(ctx actor.Context) {
	waiting := c.prog.Waiting(nil)
	if c.req.P2P != nil || len(waiting) == 0 {
		c.timeout(ctx)
		return
	}
	c.probe = &probe{state: make([]probeState, c.req.Size), about: make([]uint64, c.req.Size)}
	c.probe.push(waiting, c.req.CollSeq)
	c.askMore(ctx)
	if c.probeTimer == nil {
		c.probeTimer = c.rt.NewTimer(ctx.Self(), probeOver{})
	}
	c.probeTimer.Arm(min(probeGrace, c.req.Timeout))
}

// push adds peers to the ranks to ask, so that the first is asked next.
func (pr *probe) push(peers []int, about uint64) {
	for _, p := range slices.Backward(peers) {
		if pr.state[p] == unasked {
			pr.todo = append(pr.todo, probeTask{p, about})
		}
	}
}

// askMore asks the next ranks to ask while fewer than probeWidth answers
// are awaited.
func (c *runner) askMore(ctx actor.Context) {
	pr := c.probe
	for pr.pending < probeWidth && pr.sent < maxProbes && len(pr.todo) > 0 {
		t := pr.todo[len(pr.todo)-1]
		pr.todo = pr.todo[:len(pr.todo)-1]
		c.ask(ctx, t.peer, t.about)
	}
}

// ask probes peer about collective about, once per peer.
func (c *runner) ask(ctx actor.Context, peer int, about uint64) {
	pr := c.probe
	if peer == c.req.Rank || pr.state[peer] != unasked || pr.sent == maxProbes {
		return
	}
	pr.state[peer], pr.about[peer] = asked, about
	pr.sent++
	pr.pending++
	ctx.Send(ctx.Parent(), &Ask{Peer: peer, CollSeq: c.req.CollSeq, About: about})
}

func (c *runner) probeReplied(ctx actor.Context, m *ProbeReply) {
	pr := c.probe
	if pr == nil || pr.state[m.Peer] != asked {
		return
	}
	pr.state[m.Peer] = answered
	pr.pending--
	about := pr.about[m.Peer]
	switch m.Status {
	case NotReached:
		pr.notReached = append(pr.notReached, m.Peer)
	case Behind:
		pr.behind = append(pr.behind, m.Peer)
		about = m.At
	case GaveUp:
		pr.gaveUp = append(pr.gaveUp, m.Peer)
	case Left:
		if len(pr.left) == 0 {
			pr.accuser = m.Accuser
		}
		pr.left = append(pr.left, m.Peer)
		m.Waiting = nil // the failed ranks answer for nothing here
	}
	pr.push(m.Waiting, about)
	c.askMore(ctx)
	if pr.pending == 0 {
		c.timeout(ctx)
	}
}

// unanswered lists the ranks asked that never answered: a rank whose
// actors run answers at once, so these hang, or the network cut them off.
func (pr *probe) unanswered() []int {
	var ranks []int
	for r, st := range pr.state {
		if st == asked {
			ranks = append(ranks, r)
		}
	}
	return ranks
}

// answerProbe tells the rank actor, which answers peer, whom this
// collective waits for.
func (c *runner) answerProbe(ctx actor.Context, peer int) {
	ctx.Send(ctx.Parent(), &ProbeAnswer{Peer: peer, Seq: c.req.Seq, Waiting: c.prog.Waiting(nil)})
}

// timeout fails the operation, naming the ranks that have not started it
// and are not held back by an earlier collective, if the probe found any,
// else those that never answered it, else those that gave up on it, else
// those whose communicator broke (and who found the failure), else those
// still in an earlier one, and otherwise the ranks it waits for.
func (c *runner) timeout(ctx actor.Context) {
	waiting := c.prog.Waiting(nil)
	err := fmt.Errorf("%w after %v waiting for ranks %v", commerr.ErrTimeout, c.req.Timeout, waiting)
	ranks := waiting
	var unanswered []int
	if c.probe != nil {
		unanswered = c.probe.unanswered()
	}
	switch pr := c.probe; {
	case pr != nil && len(pr.notReached) > 0:
		ranks = slices.Sorted(slices.Values(pr.notReached))
		err = fmt.Errorf("%w: ranks %v have not started this collective", err, ranks)
	case len(unanswered) > 0:
		ranks = unanswered
		err = fmt.Errorf("%w: ranks %v did not answer whether they had: hung, or cut off", err, ranks)
	case pr != nil && len(pr.gaveUp) > 0:
		ranks = slices.Sorted(slices.Values(pr.gaveUp))
		err = fmt.Errorf("%w: ranks %v gave up on this collective", err, ranks)
	case pr != nil && len(pr.left) > 0:
		ranks = slices.Sorted(slices.Values(pr.left))
		err = &commerr.Accusation{Accuser: pr.accuser, Err: fmt.Errorf("%w: ranks %v left the communicator after a failure", err, ranks)}
	case pr != nil && len(pr.behind) > 0:
		ranks = slices.Sorted(slices.Values(pr.behind))
		err = fmt.Errorf("%w: ranks %v are still in an earlier collective", err, ranks)
	}
	if c.req.P2P == nil { // probes ask about collectives only
		c.stuckOn = waiting
	}
	c.fail(ctx, &Fail{Err: err, Ranks: ranks})
}
