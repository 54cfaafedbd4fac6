package rank

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// control handles a control frame from a peer: a failed collective, a
// failed rank, a goodbye, a timeout probe or the answer to one of ours.
func (r *rankActor) control(ctx actor.Context, d *link.Delivered) {
	defer d.Recycle()
	defer transport.Release(d.Frame)
	h := d.Frame.Header
	switch h.Tag {
	case collective.ControlFailed:
		reporter, kind, reason, err := collective.DecodeFailure(d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed failure report", "peer", d.Peer, "err", err)
			return
		}
		failure := collective.ReportedFailure(reporter, kind, reason)
		if l := r.cfg.Lease; l != nil && r.sequencer.lent {
			l.direct.Reported(h.Seq, failure, []int{reporter}, slices.Clone(d.Frame.Payload))
		}
		r.step(ctx, event{kind: evCollFailed, seq: h.Seq, rank: reporter, err: failure, payload: d.Frame.Payload})
	case collective.ControlProbe:
		asker, err := collective.DecodeProbe(d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed control frame", "peer", d.Peer, "err", err)
			return
		}
		r.answerProbe(ctx, d.Peer, h.Seq, asker)
	case collective.ControlBye:
		r.step(ctx, event{kind: evBye, rank: d.Peer})
	case collective.ControlPeerFailed:
		failed, accuser, err := collective.DecodePeerFailed(r.cfg.Size, d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed control frame", "peer", d.Peer, "err", err)
			return
		}
		why := fmt.Errorf("reported by rank %d", d.Peer)
		if accuser != d.Peer {
			why = fmt.Errorf("reported by rank %d, as rank %d found", d.Peer, accuser)
		}
		r.markFailed(ctx, failed, why)
		r.step(ctx, event{kind: evPeerReported, rank: failed, accuser: accuser, teller: d.Peer})
	case collective.ControlAgree:
		r.agreeFrame(ctx, d.Peer, h.Seq, d.Frame.Payload)
	case collective.ControlRevoked:
		revoker, err := collective.DecodeRevoked(r.cfg.Size, d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed control frame", "peer", d.Peer, "err", err)
			return
		}
		r.step(ctx, event{kind: evRevoke, rank: revoker, teller: d.Peer})
	case collective.ControlProbeReply:
		reply, err := collective.DecodeProbeReply(d.Peer, r.cfg.Size, d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed control frame", "peer", d.Peer, "err", err)
			return
		}
		if r.sequencer.runs(h.Seq) {
			r.tell(ctx, reply)
		}
	default:
		r.rt.Logger.Warn("unknown control frame", "peer", d.Peer, "tag", h.Tag)
	}
}

// answerProbe tells peer, for its collective asker, how far this rank has
// got with collective collSeq. The running collective itself says whom it
// waits for: in collSeq, or in the earlier collective that holds this
// rank back from it.
func (r *rankActor) answerProbe(ctx actor.Context, peer int, collSeq, asker uint64) {
	s := &r.sequencer
	if s.lent {
		// How far this rank got is the lease's to say: it answers once its
		// turn is back.
		r.deferred = append(r.deferred, deferredProbe{peer: peer, collSeq: collSeq, asker: asker})
		return
	}
	if running := s.running; running != nil && running.P2P == nil && running.CollSeq <= collSeq {
		behind := running.CollSeq < collSeq
		r.probes = append(r.probes, pendingProbe{peer: peer, seq: running.Seq, asker: asker, behind: behind, at: running.CollSeq})
		r.tell(ctx, &collective.Probe{Peer: peer})
		return
	}
	status, at, waiting := collective.Ended, uint64(0), []int(nil)
	switch {
	case collSeq >= s.collSeq && s.broken != nil:
		status, at, waiting = collective.Left, uint64(r.cfg.Rank), s.brokenRanks
		if acc := (*commerr.Accusation)(nil); errors.As(s.broken, &acc) {
			at = uint64(acc.Accuser)
		}
	case collSeq >= s.collSeq:
		status = collective.NotReached
	case r.gaveUp[collSeq] != nil:
		status, waiting = collective.GaveUp, r.gaveUp[collSeq]
	}
	r.replyProbe(ctx, peer, asker, status, at, waiting)
}

func (r *rankActor) probeAnswered(ctx actor.Context, m *collective.ProbeAnswer) {
	for i, p := range r.probes {
		if p.peer == m.Peer && p.seq == m.Seq {
			r.probes = slices.Delete(r.probes, i, i+1)
			status := collective.Stuck
			if p.behind {
				status = collective.Behind
			}
			r.replyProbe(ctx, p.peer, p.asker, status, p.at, m.Waiting)
			return
		}
	}
}

// gaveUpKept bounds the timed-out collectives a rank remembers: a peer
// asks about one within its own timeout, long before this rank has started
// that many more.
const gaveUpKept = 64

// answerProbes answers the probes that the operation m reports the end of
// never got to, now that this rank knows how the operation ended.
func (r *rankActor) answerProbes(ctx actor.Context, m *collective.Finished) {
	if m.StuckOn != nil {
		maps.DeleteFunc(r.gaveUp, func(seq uint64, _ []int) bool { return seq+gaveUpKept <= m.CollSeq })
		if r.gaveUp == nil {
			r.gaveUp = map[uint64][]int{}
		}
		r.gaveUp[m.CollSeq] = m.StuckOn
	}
	r.probes = slices.DeleteFunc(r.probes, func(p pendingProbe) bool {
		if p.seq != m.Seq {
			return false
		}
		status, waiting := collective.Ended, m.StuckOn
		switch {
		case p.behind:
			// The collective asked about comes next: it has not started.
			status, waiting = collective.NotReached, nil
		case m.StuckOn != nil:
			status = collective.GaveUp
		}
		r.replyProbe(ctx, p.peer, p.asker, status, 0, waiting)
		return true
	})
}

func (r *rankActor) replyProbe(ctx actor.Context, peer int, asker uint64, status collective.ProbeStatus, at uint64, waiting []int) {
	if l := r.links.of(peer); l != nil {
		link.SendControl(ctx, l.pid, l.plane, collective.ControlFrame(r.cfg.CommID, asker, collective.ControlProbeReply, collective.EncodeProbeReply(status, at, waiting)))
	}
}

// deferredProbe is a probe that came while the rank's turn was lent.
type deferredProbe struct {
	peer           int
	collSeq, asker uint64
}

// answerDeferred answers the probes that came while the turn was lent.
func (r *rankActor) answerDeferred(ctx actor.Context) {
	if r.sequencer.lent {
		return
	}
	probes := r.deferred
	r.deferred = nil
	for _, p := range probes {
		r.answerProbe(ctx, p.peer, p.collSeq, p.asker)
	}
}
