package rank

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
)

// Agree decides, among the ranks that survive, the AND of their Flags and
// the ranks that failed (actors/agree), and calls Done with the value. It
// runs on a broken communicator too: that is what it is for. Every rank
// must call it, the same number of times.
type Agree struct {
	Flags uint64
	Done  func(agree.Value, error)
}

// agreement is an agreement this rank started. It stays after it
// decides, to answer a coordinator that takes over for ranks that have
// not, and to take over itself if it is the lowest rank alive: until the
// next one decides, since that needs every rank alive to have decided
// this one, and so the rank keeps the one before its latest too.
type agreement struct {
	seq  uint64
	node *agree.Node
	done func(agree.Value, error) // nil once called
}

// agreements is what a rank keeps of its agreements: the latest and the
// one before it, what they have yet to send, and the messages of ones it
// has not started. Made on the first, since most ranks of a simulation
// never agree.
type agreements struct {
	started  uint64 // agreements started, which numbers the next
	latest   *agreement
	prev     *agreement
	out      []agreeMsg
	flushing bool
	early    map[uint64][]agree.Msg
	watched  map[int]bool // peers whose links watch them for the agreement
}

// agreeState returns the rank's agreements, made on first use.
func (r *rankActor) agreeState() *agreements {
	if r.agrees == nil {
		r.agrees = &agreements{}
	}
	return r.agrees
}

// agreeMsg is a message an agreement has yet to send.
type agreeMsg struct {
	a *agreement
	m agree.Msg
}

// queue adds what agreement a sends to what the rank has yet to send.
func (g *agreements) queue(a *agreement, ms []agree.Msg) {
	for _, m := range ms {
		g.out = append(g.out, agreeMsg{a, m})
	}
}

func (r *rankActor) startAgree(ctx actor.Context, m *Agree) {
	g := r.agreeState()
	seq := g.started
	g.started++
	node, out := agree.New(r.cfg.Rank, r.cfg.Size, m.Flags, r.failedRanks())
	g.prev = g.latest
	g.latest = &agreement{seq: seq, node: node, done: m.Done}
	g.queue(g.latest, out)
	for _, early := range g.early[seq] {
		g.queue(g.latest, node.Receive(early))
	}
	for s := range g.early {
		if s <= seq {
			delete(g.early, s)
		}
	}
	r.agreeFlush(ctx)
}

// agreeFrame handles a peer's agreement message.
func (r *rankActor) agreeFrame(ctx actor.Context, peer int, seq uint64, payload []byte) {
	m, err := agree.Decode(peer, r.cfg.Rank, r.cfg.Size, payload)
	if err != nil {
		r.rt.Logger.Warn("malformed agreement message", "peer", peer, "err", err)
		return
	}
	g := r.agreeState()
	switch a, prev := g.latest, g.prev; {
	case a != nil && a.seq == seq:
		g.queue(a, a.node.Receive(m))
		r.agreeFlush(ctx)
	case prev != nil && prev.seq == seq:
		g.queue(prev, prev.node.Receive(m))
		r.agreeFlush(ctx)
	case seq >= g.started:
		if g.early == nil {
			g.early = map[uint64][]agree.Msg{}
		}
		g.early[seq] = append(g.early[seq], m) // this rank has yet to call it
	}
}

// failedRanks lists the peers this rank knows have failed or left.
func (r *rankActor) failedRanks() []int {
	return slices.Clone(r.failed)
}

// knowsFailed reports whether this rank knows peer failed or left.
func (r *rankActor) knowsFailed(peer int) bool {
	_, ok := slices.BinarySearch(r.failed, peer)
	return ok
}

// markFailed records that peer failed, or left, and tells the agreement.
// The first news of each peer is logged, as a warning where it is a
// failure (an operator needs it without turning debug on): a peer that
// said goodbye, or any peer once this rank closes or aborts, only ends
// its connection.
func (r *rankActor) markFailed(ctx actor.Context, peer int, why error) {
	at, known := slices.BinarySearch(r.failed, peer)
	if peer < 0 || peer >= r.cfg.Size || peer == r.cfg.Rank || known {
		return
	}
	if s := &r.sequencer; slices.Contains(s.left, peer) || s.closing || s.aborted != nil {
		r.rt.Logger.Debug("peer's connection ended", "peer", peer, "err", why)
	} else {
		r.rt.Logger.Warn("peer failed", "peer", peer, "err", why)
	}
	r.failed = slices.Insert(r.failed, at, peer)
	if r.cfg.PeerFailed != nil {
		r.cfg.PeerFailed(peer)
	}
	if g := r.agrees; g != nil {
		left := slices.Contains(r.sequencer.left, peer)
		for _, a := range []*agreement{g.prev, g.latest} {
			if a == nil {
				continue
			}
			if _, decided := a.node.Decided(); decided && left {
				// A peer that said goodbye sent whatever it owed this
				// agreement before it: nobody needs this rank to take
				// over for it, reaching for ranks that may have left too.
				continue
			}
			g.queue(a, a.node.Fail(peer))
		}
		r.agreeFlush(ctx)
	}
}

// agreeFlush sends what the agreement has to send, feeding its messages
// to itself back in, and completes the request once it has decided.
// Connecting to a peer may find it failed, which feeds the agreement
// more: a flush under way takes that too.
func (r *rankActor) agreeFlush(ctx actor.Context) {
	g := r.agrees
	if g == nil || g.latest == nil || g.flushing {
		return
	}
	a := g.latest
	g.flushing = true
	for len(g.out) > 0 {
		out := g.out[0]
		g.out = g.out[1:]
		if out.m.To == r.cfg.Rank {
			g.queue(out.a, out.a.node.Receive(out.m))
			continue
		}
		if l, err := r.connect(ctx, out.m.To); err == nil {
			link.SendControl(ctx, l.pid, l.plane, collective.ControlFrame(r.cfg.CommID, out.a.seq, collective.ControlAgree, agree.Encode(out.m)))
		}
	}
	g.flushing = false
	r.agreeWatch(ctx, a.node.WaitingOn())
	if v, ok := a.node.Decided(); ok && a.done != nil {
		done := a.done
		a.done = nil
		done(v, nil)
	}
}

// abortAgreement fails an agreement still waiting to decide.
func (r *rankActor) abortAgreement(err error) {
	if g := r.agrees; g != nil && g.latest != nil && g.latest.done != nil {
		a := g.latest
		done := a.done
		a.done = nil
		done(agree.Value{}, err)
	}
}

// agreeWatch has the links to the ranks the agreement waits on watch them,
// and the others stop: a rank that fails silently, or before this one
// ever talked to it, is found, and the agreement goes on without it.
func (r *rankActor) agreeWatch(ctx actor.Context, peers []int) {
	g := r.agreeState()
	for p := range g.watched {
		if !slices.Contains(peers, p) {
			delete(g.watched, p)
			if l := r.links.of(p); l != nil {
				ctx.Send(l.pid, &link.Watch{On: false})
			}
		}
	}
	for _, p := range peers {
		if g.watched[p] || r.knowsFailed(p) {
			continue
		}
		if l, err := r.connect(ctx, p); err == nil {
			if g.watched == nil {
				g.watched = map[int]bool{}
			}
			g.watched[p] = true
			ctx.Send(l.pid, &link.Watch{On: true})
		}
	}
}
