package rank

import (
	"maps"
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

// agreeMsg is a message an agreement has yet to send.
type agreeMsg struct {
	a *agreement
	m agree.Msg
}

// agreeQueue adds what agreement a sends to what the rank has yet to send.
func (r *rankActor) agreeQueue(a *agreement, ms []agree.Msg) {
	for _, m := range ms {
		r.agreeOut = append(r.agreeOut, agreeMsg{a, m})
	}
}

func (r *rankActor) startAgree(ctx actor.Context, m *Agree) {
	seq := r.agreeSeq
	r.agreeSeq++
	node, out := agree.New(r.cfg.Rank, r.cfg.Size, m.Flags, r.failedRanks())
	r.agreePrev = r.agreement
	r.agreement = &agreement{seq: seq, node: node, done: m.Done}
	r.agreeQueue(r.agreement, out)
	for _, early := range r.agreeEarly[seq] {
		r.agreeQueue(r.agreement, node.Receive(early))
	}
	for s := range r.agreeEarly {
		if s <= seq {
			delete(r.agreeEarly, s)
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
	switch a, prev := r.agreement, r.agreePrev; {
	case a != nil && a.seq == seq:
		r.agreeQueue(a, a.node.Receive(m))
		r.agreeFlush(ctx)
	case prev != nil && prev.seq == seq:
		r.agreeQueue(prev, prev.node.Receive(m))
		r.agreeFlush(ctx)
	case seq >= r.agreeSeq:
		if r.agreeEarly == nil {
			r.agreeEarly = map[uint64][]agree.Msg{}
		}
		r.agreeEarly[seq] = append(r.agreeEarly[seq], m) // this rank has yet to call it
	}
}

// failedRanks lists the peers this rank knows have failed or left.
func (r *rankActor) failedRanks() []int {
	return slices.Sorted(maps.Keys(r.failed))
}

// markFailed records that peer failed, or left, and tells the agreement.
// The first news of each peer is logged, as a warning where it is a
// failure (an operator needs it without turning debug on): a peer that
// said goodbye, or any peer once this rank closes or aborts, only ends
// its connection.
func (r *rankActor) markFailed(ctx actor.Context, peer int, why error) {
	if peer < 0 || peer >= r.cfg.Size || peer == r.cfg.Rank || r.failed[peer] {
		return
	}
	if s := &r.sequencer; slices.Contains(s.left, peer) || s.closing || s.aborted != nil {
		r.rt.Logger.Debug("peer's connection ended", "peer", peer, "err", why)
	} else {
		r.rt.Logger.Warn("peer failed", "peer", peer, "err", why)
	}
	if r.failed == nil {
		r.failed = map[int]bool{} // made on the first failure: most ranks never see one
	}
	r.failed[peer] = true
	if r.cfg.PeerFailed != nil {
		r.cfg.PeerFailed(peer)
	}
	for _, a := range []*agreement{r.agreePrev, r.agreement} {
		if a != nil {
			r.agreeQueue(a, a.node.Fail(peer))
		}
	}
	r.agreeFlush(ctx)
}

// agreeFlush sends what the agreement has to send, feeding its messages
// to itself back in, and completes the request once it has decided.
// Connecting to a peer may find it failed, which feeds the agreement
// more: a flush under way takes that too.
func (r *rankActor) agreeFlush(ctx actor.Context) {
	a := r.agreement
	if a == nil || r.agreeFlushing {
		return
	}
	r.agreeFlushing = true
	for len(r.agreeOut) > 0 {
		out := r.agreeOut[0]
		r.agreeOut = r.agreeOut[1:]
		if out.m.To == r.cfg.Rank {
			r.agreeQueue(out.a, out.a.node.Receive(out.m))
			continue
		}
		if l, err := r.connect(ctx, out.m.To); err == nil {
			ctx.Send(l.pid, collective.ControlFrame(r.cfg.CommID, out.a.seq, collective.ControlAgree, agree.Encode(out.m)))
		}
	}
	r.agreeFlushing = false
	r.agreeWatch(ctx, a.node.WaitingOn())
	if v, ok := a.node.Decided(); ok && a.done != nil {
		done := a.done
		a.done = nil
		done(v, nil)
	}
}

// abortAgreement fails an agreement still waiting to decide.
func (r *rankActor) abortAgreement(err error) {
	if a := r.agreement; a != nil && a.done != nil {
		done := a.done
		a.done = nil
		done(agree.Value{}, err)
	}
}

// agreeWatch has the links to the ranks the agreement waits on watch them,
// and the others stop: a rank that fails silently, or before this one
// ever talked to it, is found, and the agreement goes on without it.
func (r *rankActor) agreeWatch(ctx actor.Context, peers []int) {
	for p := range r.agreeWatched {
		if !slices.Contains(peers, p) {
			delete(r.agreeWatched, p)
			if l := r.links.of(p); l != nil {
				ctx.Send(l.pid, &link.Watch{On: false})
			}
		}
	}
	for _, p := range peers {
		if r.agreeWatched[p] || r.failed[p] {
			continue
		}
		if l, err := r.connect(ctx, p); err == nil {
			if r.agreeWatched == nil {
				r.agreeWatched = map[int]bool{}
			}
			r.agreeWatched[p] = true
			ctx.Send(l.pid, &link.Watch{On: true})
		}
	}
}
