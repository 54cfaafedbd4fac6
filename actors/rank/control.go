package rank

import (
	"errors"
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
		r.peerReported(ctx, d.Peer, h.Seq, d.Frame.Payload)
	case collective.ControlProbe:
		asker, err := collective.DecodeProbe(d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed control frame", "comm", r.cfg.Comm, "peer", d.Peer, "err", err)
			return
		}
		r.answerProbe(ctx, d.Peer, h.Seq, asker)
	case collective.ControlBye:
		r.links.of(d.Peer).left = true
	case collective.ControlPeerFailed:
		r.peerReportedFailure(ctx, d.Peer, d.Frame.Payload)
	case collective.ControlAgree:
		r.agreeFrame(ctx, d.Peer, h.Seq, d.Frame.Payload)
	case collective.ControlRevoked:
		r.peerRevoked(ctx, d.Peer, d.Frame.Payload)
	case collective.ControlProbeReply:
		reply, err := collective.DecodeProbeReply(d.Peer, r.cfg.Size, d.Frame.Payload)
		if err != nil {
			r.rt.Logger.Warn("malformed control frame", "comm", r.cfg.Comm, "peer", d.Peer, "err", err)
			return
		}
		if r.runsCollective(h.Seq) {
			r.tell(ctx, reply)
		}
	default:
		r.rt.Logger.Warn("unknown control frame", "comm", r.cfg.Comm, "peer", d.Peer, "tag", h.Tag)
	}
}

func (r *rankActor) runsCollective(collSeq uint64) bool {
	return r.running != nil && r.running.P2P == nil && r.running.CollSeq == collSeq
}

// report is a peer's word that a collective failed, kept until this rank
// starts the collective, and then passed on to its peers.
type report struct {
	err      error
	reporter int
	payload  []byte
}

func (r *rankActor) peerReported(ctx actor.Context, peer int, collSeq uint64, payload []byte) {
	reporter, reason, err := collective.DecodeFailure(payload)
	if err != nil {
		r.rt.Logger.Warn("malformed failure report", "comm", r.cfg.Comm, "peer", peer, "err", err)
		return
	}
	failure := commerr.Invalid("rank %d reported: %s", reporter, reason)
	switch {
	case collSeq >= r.collSeq:
		if _, ok := r.reported[collSeq]; !ok {
			r.reported[collSeq] = report{err: failure, reporter: reporter, payload: slices.Clone(payload)}
		}
	case r.runsCollective(collSeq):
		r.tell(ctx, &collective.Fail{Err: failure, Ranks: []int{reporter}, Forward: slices.Clone(payload)})
	}
}

// answerProbe tells peer, for its collective asker, how far this rank has
// got with collective collSeq. The running collective itself says whom it
// waits for: in collSeq, or in the earlier collective that holds this
// rank back from it.
func (r *rankActor) answerProbe(ctx actor.Context, peer int, collSeq, asker uint64) {
	running := r.running != nil && r.running.P2P == nil
	if running && r.running.CollSeq <= collSeq {
		behind := r.running.CollSeq < collSeq
		r.probes = append(r.probes, pendingProbe{peer: peer, seq: r.running.Seq, asker: asker, behind: behind, at: r.running.CollSeq})
		r.tell(ctx, &collective.Probe{Peer: peer})
		return
	}
	status, at, waiting := collective.Ended, uint64(0), []int(nil)
	switch {
	case collSeq >= r.collSeq && r.broken != nil:
		status, at, waiting = collective.Left, uint64(r.cfg.Rank), r.brokenRanks
		if acc := (*commerr.Accusation)(nil); errors.As(r.broken, &acc) {
			at = uint64(acc.Accuser)
		}
	case collSeq >= r.collSeq:
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
		ctx.Send(l.pid, collective.ControlFrame(r.cfg.CommID, asker, collective.ControlProbeReply, collective.EncodeProbeReply(status, at, waiting)))
	}
}
