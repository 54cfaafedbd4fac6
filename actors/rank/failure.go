package rank

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
)

// A peer whose connection fails without saying goodbye has failed, and so
// has the communicator: as with NCCL, every later operation fails (until
// the communicator is rebuilt), instead of each one waiting out its
// timeout for a rank that is gone or for a survivor that gave up. The rank
// that sees the failure tells the peers it has links to, and each of them
// tells theirs, once: the word floods the ranks that talk to each other,
// over links that exist anyway, so that ranks that do not talk to the
// failed one directly stop too.

// peerFailed handles the failure of the link to a peer.
func (r *rankActor) peerFailed(ctx actor.Context, m *link.Failed) {
	r.rt.Logger.Debug("connection to peer failed", "comm", r.cfg.Comm, "rank", r.cfg.Rank, "peer", m.Peer, "err", m.Err)
	r.markFailed(ctx, m.Peer)
	if l := r.links.of(m.Peer); l != nil && l.left || r.closing || r.aborted != nil || r.broken != nil {
		return
	}
	r.breakComm(ctx, fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, m.Peer, m.Err), m.Peer)
	r.spreadFailure(ctx, m.Peer, r.cfg.Rank, m.Peer)
}

// spreadFailure tells every live link but the failed rank's and the
// teller's that failed has failed, as accuser found.
func (r *rankActor) spreadFailure(ctx actor.Context, failed, accuser, teller int) {
	r.tellPeers(ctx, collective.ControlPeerFailed, collective.EncodePeerFailed(failed, accuser), failed, teller)
}

// tellPeers sends a control frame to every live link but those to skip.
func (r *rankActor) tellPeers(ctx actor.Context, tag uint32, payload []byte, skip ...int) {
	for _, l := range r.links.order {
		if l.live && !slices.Contains(skip, l.peer) {
			ctx.Send(l.pid, collective.ControlFrame(r.cfg.CommID, 0, tag, payload))
		}
	}
}

// peerReportedFailure handles a peer's word that a rank failed.
func (r *rankActor) peerReportedFailure(ctx actor.Context, reporter int, payload []byte) {
	failed, accuser, err := collective.DecodePeerFailed(r.cfg.Size, payload)
	if err != nil {
		r.rt.Logger.Warn("malformed control frame", "comm", r.cfg.Comm, "peer", reporter, "err", err)
		return
	}
	r.markFailed(ctx, failed)
	if r.closing || r.aborted != nil || r.broken != nil {
		return
	}
	r.breakComm(ctx, &commerr.Accusation{Accuser: accuser, Err: fmt.Errorf("%w: rank %d", commerr.ErrPeerFailed, failed)}, failed)
	r.spreadFailure(ctx, failed, accuser, reporter)
}

// Revoke revokes the communicator, as ULFM's MPI_Comm_revoke: every
// rank's running, queued and later operations fail with ErrRevoked, except
// agreements, which are how the survivors go on.
type Revoke struct{}

// revoke revokes the communicator at this rank, as by revoker, and passes
// the word on over every link but the teller's, once: it floods the ranks
// that talk to each other, as a failure does.
func (r *rankActor) revoke(ctx actor.Context, revoker, teller int) {
	if r.revoked || r.aborted != nil || r.closing {
		return
	}
	r.revoked = true
	if r.broken == nil {
		r.breakComm(ctx, fmt.Errorf("%w by rank %d", commerr.ErrRevoked, revoker), revoker)
	}
	r.tellPeers(ctx, collective.ControlRevoked, collective.EncodeRevoked(revoker), teller)
}

// peerRevoked handles a peer's word that the communicator is revoked.
func (r *rankActor) peerRevoked(ctx actor.Context, teller int, payload []byte) {
	revoker, err := collective.DecodeRevoked(r.cfg.Size, payload)
	if err != nil {
		r.rt.Logger.Warn("malformed control frame", "comm", r.cfg.Comm, "peer", teller, "err", err)
		return
	}
	r.revoke(ctx, revoker, teller)
}

// breakComm fails the running operation and every queued one, and every
// later one, with err naming the failed rank.
func (r *rankActor) breakComm(ctx actor.Context, err error, failed int) {
	r.broken, r.brokenRanks = err, []int{failed}
	if r.running != nil {
		r.tell(ctx, &collective.Fail{Err: err, Ranks: r.brokenRanks})
	}
	r.rejectQueued(err, r.brokenRanks)
	r.revokeWindows(ctx, err)
}

// sayBye tells every peer that this rank is finalizing, so that they take
// the end of its connections for what it is.
func (r *rankActor) sayBye(ctx actor.Context) {
	r.tellPeers(ctx, collective.ControlBye, nil)
}

// peerLost fails the running operation that waits for a peer whose
// connection ended: with the communicator's failure if it broke (the peer
// may have left because of it), else naming the peer.
func (r *rankActor) peerLost(ctx actor.Context, m *collective.PeerLost) {
	if r.running == nil || r.running.Seq != m.Seq {
		return
	}
	err, ranks := r.broken, r.brokenRanks
	if err == nil {
		err, ranks = fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, m.Peer, m.Err), []int{m.Peer}
	}
	r.tell(ctx, &collective.Fail{Err: err, Ranks: ranks})
}
