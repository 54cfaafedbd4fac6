package rank

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// Links released (Config.ReleaseLinks): a collective links its peers as
// it comes to them (collective.Request.Lazy) and lets go of each after a
// run of steps with it (collective.DoneWith); the rank then releases the
// link (link.Release), and the peer's rank its end as its own collective
// lets go, or at once if only that collective holds it
// (collective.Unlinked). A frame between the two ranks after that goes
// on a new link: the frames the old one was given after its release
// went, and those its plane kept (link.Released), an operation that
// needs the peer (collective.NeedLink), or the peer's new connection
// (Connected).

// lazyLinks gives req, a collective, the links the rank has to its
// peers and leaves the others to the collective to ask for: the slices
// are req's own, as the collective lets go of each link.
func (r *rankActor) lazyLinks(ctx actor.Context, req *collective.Request) {
	peers := req.Peers()
	req.Lazy, req.Strays = true, r.strays
	req.Links, req.Lend, req.Planes = make([]*actor.PID, len(peers)), make([]bool, len(peers)), make([]*link.Plane, len(peers))
	for i, peer := range peers {
		if l := r.links.of(peer); l != nil && l.live && r.usable(ctx, l) {
			l.inUse = true
			req.Links[i], req.Lend[i], req.Planes[i] = l.pid, l.lend, l.plane
		}
	}
}

// lazy reports whether req takes its links as it comes to its peers.
func (r *rankActor) lazy(req *collective.Request) bool {
	return r.cfg.ReleaseLinks && req.P2P == nil
}

// linkAsked links the peer the running collective asks for, unless the
// link to it is being released: then once it is.
func (r *rankActor) linkAsked(ctx actor.Context, m *collective.NeedLink) {
	req := r.sequencer.running
	if req == nil || req.Seq != m.Seq {
		return
	}
	if l := r.links.of(m.Peer); l != nil && !r.usable(ctx, l) {
		l.again = true
		return
	}
	r.relink(ctx, m.Peer)
}

// relink links peer, with the link the rank has or a new one, and lends
// it to the running collective.
func (r *rankActor) relink(ctx actor.Context, peer int) {
	if l, err := r.connect(ctx, peer); err == nil {
		r.lendLink(ctx, l)
	}
}

// dropLink forgets l, which both ends released or which failed while
// being released, stops it, and starts what waited for its release.
func (r *rankActor) dropLink(ctx actor.Context, l *peerLink) {
	r.links.remove(l)
	ctx.Stop(l.pid)
	r.heldStart(ctx)
}

// usable reports whether l can carry an operation's frames: it is not
// being released. One whose peer released its end brings nothing more,
// and is released first.
func (r *rankActor) usable(ctx actor.Context, l *peerLink) bool {
	if l.asked {
		r.release(ctx, l)
	}
	return !l.releasing
}

// lendLink gives l to the running collective, if it is lazy and has a
// part for l's peer: it asked for it, or the peer connected first.
func (r *rankActor) lendLink(ctx actor.Context, l *peerLink) {
	req := r.sequencer.running
	if req == nil || !req.Lazy || r.runner == nil || !l.live || l.releasing {
		return
	}
	if _, ok := slices.BinarySearch(req.Peers(), l.peer); !ok {
		return
	}
	l.inUse = true
	ctx.Send(r.runner, &collective.Linked{Seq: req.Seq, Peer: l.peer, Link: l.pid, Lend: l.lend, Plane: l.plane})
}

// doneWith notes that the collective let go of its link to peer, and
// releases it if nothing else uses it.
func (r *rankActor) doneWith(ctx actor.Context, peer int) {
	if l := r.links.of(peer); l != nil {
		l.inUse = false
		r.release(ctx, l)
	}
}

// releaseAsked releases this end of the link to peer, whose end the peer
// released, at once if nothing here uses it, or if only the running lazy
// collective does, which takes its frames from the next link
// (collective.Unlinked). Anything else that uses it (an operation that
// took its links at once, frames on its plane for one to come) holds it
// to its end, and may wait there for the peer's next operation, which
// waits for the release: this end declines it (link.Decline), and the
// peer takes the link back.
func (r *rankActor) releaseAsked(ctx actor.Context, peer int) {
	l := r.links.of(peer)
	if l == nil {
		return
	}
	l.asked = true
	if req := r.sequencer.running; l.inUse && req != nil && req.Lazy && r.runner != nil {
		ctx.Send(r.runner, &collective.Unlinked{Seq: req.Seq, Peer: peer, Plane: l.plane})
		l.inUse = false
	}
	r.release(ctx, l)
	if l.live && !l.releasing {
		l.asked = false
		ctx.Send(l.pid, &link.Decline{})
	}
}

// declined takes back the link to peer, whose release the peer declined:
// what waited for the release takes it now.
func (r *rankActor) declined(ctx actor.Context, peer int) {
	l := r.links.of(peer)
	if l == nil || !l.releasing {
		return
	}
	l.releasing = false
	r.heldStart(ctx)
	if l.again {
		l.again = false
		r.lendLink(ctx, l)
	}
}

// operationEnded lets go of the links the operation held, and releases
// those whose peers released theirs.
func (r *rankActor) operationEnded(ctx actor.Context) {
	if !r.cfg.ReleaseLinks {
		return
	}
	for _, l := range r.links.order {
		l.inUse = false
		if l.asked {
			r.release(ctx, l)
		}
	}
}

// release releases l unless something here uses it: an operation, a
// window, an agreement, or messages on its plane that no operation took.
// A collective's frames that no operation took yet go to the next link
// (released). A link whose connection may reset is kept (lossless).
func (r *rankActor) release(ctx actor.Context, l *peerLink) {
	if !r.cfg.ReleaseLinks || !l.lossless || l.releasing || !l.live || l.inUse || len(r.windows) > 0 ||
		r.agrees != nil && r.agrees.watched[l.peer] || !l.plane.Idle() {
		return
	}
	l.releasing = true
	r.links.forgetSets(l.peer)
	if r.cfg.Lease != nil {
		r.cfg.Lease.removePlane(l.plane)
	}
	ctx.Send(l.pid, &link.Release{})
}

// released forgets a link both ends released, and stops it. What it was
// given after its release went goes on a new link, as does what waited
// for it: the running collective's request for it, or the peer's new
// connection. A link that was forgotten already hands on the frames it
// was given meanwhile.
func (r *rankActor) released(ctx actor.Context, m *link.Released) {
	l := r.links.of(m.Peer)
	again := len(m.Unsent) > 0
	early := m.Early
	if l != nil && l.releasing {
		again = again || l.again || len(early) > 0
		r.dropLink(ctx, l)
	}
	var nl *peerLink
	var err error
	if again && !r.sequencer.closing {
		nl, err = r.connect(ctx, m.Peer)
	}
	if nl == nil || err != nil {
		for _, f := range m.Unsent {
			transport.Release(f)
		}
		for _, f := range early {
			transport.Release(f)
		}
		return
	}
	nl.plane.Keep(early)
	for _, f := range m.Unsent {
		nl.plane.Post(ctx, nl.pid, &link.Send{Frame: f})
	}
	r.lendLink(ctx, nl)
}

// peerConnected links a peer that connected, once the link to it being
// released is gone, and lends the link to the running collective.
func (r *rankActor) peerConnected(ctx actor.Context, peer int) {
	if l := r.links.of(peer); l != nil && l.releasing {
		l.again = true
		return
	}
	r.relink(ctx, peer)
}

// releaseFailed forgets l, which failed while being released, so that
// what waited for its release finds the peer gone.
func (r *rankActor) releaseFailed(ctx actor.Context, l *peerLink) {
	r.dropLink(ctx, l)
	if l.again {
		r.relink(ctx, l.peer)
	}
}

// holdStart reports whether req, which takes all its links at once,
// must wait for one of them being released: it starts once that is.
func (r *rankActor) holdStart(ctx actor.Context, req *collective.Request) bool {
	if !r.cfg.ReleaseLinks || r.lazy(req) {
		return false
	}
	held := false
	for _, peer := range req.Peers() {
		if l := r.links.of(peer); l != nil && !r.usable(ctx, l) {
			held = true
		}
	}
	if held {
		r.held = req
	}
	return held
}

// errReleasing refuses what needs links kept: an agreement or a window,
// whose peers answer at any time.
var errReleasing = commerr.Invalid("not available on a communicator that releases its links (WithLinkRelease)")

// heldStart starts the operation holdStart held, if it still waits.
func (r *rankActor) heldStart(ctx actor.Context) {
	req := r.held
	r.held = nil
	if req != nil && r.sequencer.running == req {
		r.start(ctx, req)
	}
}

// failHeld fails req, which holdStart held: it never reached the
// collective actor, which would drop word of an operation it does not
// run, and the operation would start after the failure as if none had
// come. Held operations are point-to-point, whose peers hear nothing of
// their failure: it ends here, its messages numbered as had it started,
// so that the next ones pair as they would then.
func (r *rankActor) failHeld(ctx actor.Context, req *collective.Request, err error, ranks []int) {
	r.held = nil
	r.ordinals.number(req)
	err = r.opError(req, err, ranks)
	req.End(err)
	r.operationEnded(ctx)
	r.step(ctx, event{kind: evEnded, seq: req.Seq, err: err})
}

// toldWord is a control frame the rank sent every link, and the peers it
// skipped.
type toldWord struct {
	tag     uint32
	payload []byte
	skip    []int
}

// spread sends a control frame to every link but those to skip, and,
// with ReleaseLinks, keeps it for the links made later (retell).
func (r *rankActor) spread(ctx actor.Context, tag uint32, payload []byte, skip ...int) {
	r.tellPeers(ctx, tag, 0, payload, skip...)
	if r.cfg.ReleaseLinks {
		r.told = append(r.told, toldWord{tag: tag, payload: payload, skip: skip})
	}
}

// retell sends l, a new link, the word the rank spread before it: a
// peer reached only now, which a kept link would have told, may wait
// on a rank that failed for the word of why.
func (r *rankActor) retell(ctx actor.Context, l *peerLink) {
	for _, w := range r.told {
		if !slices.Contains(w.skip, l.peer) {
			link.SendControl(ctx, l.pid, l.plane, collective.ControlFrame(r.cfg.CommID, 0, w.tag, w.payload))
		}
	}
}
