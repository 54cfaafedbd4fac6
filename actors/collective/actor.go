package collective

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/transport"
)

// Producer returns the producer of the actor that runs req. Once req has
// succeeded, the actor runs each *Request its parent sends it, one at a
// time, keeping its buffers and the Progress of recent schedules: an
// operation then costs no spawn. After an operation that failed it stops,
// as frames, payloads it lent and timers of that operation may still be on
// their way to it; the parent runs the next one on a new actor. A
// successful operation leaves only its timeout behind, which Timer.Fired
// tells apart.
func Producer(rt *actors.Runtime, req *Request) actor.Producer {
	return func() actor.Actor { return &runner{rt: rt, first: req} }
}

type timedOut struct{}

// sendDone says the transport no longer reads a borrowed send's payload.
type sendDone struct{ step int }

type runner struct {
	rt       *actors.Runtime
	first    *Request  // run once started
	adopted  *Adoption // or this, carried on with once started
	executor           // req is the running operation; nil between operations

	timer *actors.Timer // the operation's timeout
	// probeTimer bounds the wait for a probe's answers.
	probeTimer *actors.Timer
	recvFrom   []peerFrames      // found at start
	sink       *link.Forwarder   // the collective's frames come to it from the planes
	early      []transport.Frame // what a plane held, while it is handed on
	sentFuncs  []func()          // by step: a lent send's Frame.Sent, made once
	sends      link.SendPool     // the messages of its frames
	finished   Finished          // the parent reads it before it sends the next operation
	probe      *probe
	stuckOn    []int // the ranks it waited for when it timed out

	// A lazy collective's (Request.Lazy) links, by peer in Request.Peers
	// order: whether it asked for one (NeedLink) and whether it is done
	// with the peer; and the frames waiting for their links, in order.
	parent *actor.PID
	lazy   []lazyPeer
	parked []parkedFrame
}

type lazyPeer struct{ asked, done bool }

// parkedFrame is a frame to the p-th peer, whose link is on its way.
type parkedFrame struct {
	p int
	f transport.Frame
}

func (c *runner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.sink, c.parent = link.NewForwarder(c.rt, ctx.Self()), ctx.Parent()
		if c.adopted != nil {
			c.adopt(ctx, c.adopted)
		} else {
			c.start(ctx, c.first)
		}
		c.first, c.adopted = nil, nil
		return
	case *Request:
		c.start(ctx, m)
		return
	case *Adoption:
		c.adopt(ctx, m)
		return
	}
	if c.req == nil {
		// Between operations, or ended and stopping: what comes belongs to
		// an operation that is over.
		if d, ok := ctx.Message().(*link.Delivered); ok {
			transport.Release(d.Frame)
			d.Recycle()
		}
		return
	}
	switch m := ctx.Message().(type) {
	case sendDone:
		if ended, f := c.sent(m.step); ended {
			c.finish(ctx, f)
		}
	case *link.Delivered:
		if ended, f := c.arrive(m.Peer, m.Frame); ended {
			c.finish(ctx, f)
		}
		m.Recycle()
	case *Linked:
		if m.Seq == c.req.Seq && c.req.Lazy {
			c.linked(m)
			if ended, f := c.run(); ended { // the sends that waited were its last
				c.finish(ctx, f)
			}
		}
	case *Unlinked:
		if p, ok := c.req.peerIndex(m.Peer); ok && m.Seq == c.req.Seq && c.req.Lazy && c.req.Planes[p] == m.Plane {
			c.unlinked(p)
		}
	case *Fail:
		c.fail(ctx, m)
	case *link.Failed:
		// Frames the peer sent before it went away came first: fail only if
		// one is still missing. The rank knows best why the peer went (it
		// may have failed because another rank did), so it says how.
		if c.needs(m.Peer) {
			ctx.Send(ctx.Parent(), &PeerLost{Seq: c.req.Seq, Peer: m.Peer, Err: m.Err})
		}
	case timedOut:
		if c.timer.Fired() {
			c.startProbe(ctx)
		}
	case *Probe:
		c.answerProbe(ctx, m.Peer)
	case *ProbeReply:
		c.probeReplied(ctx, m)
	case probeOver:
		if c.probeTimer.Fired() {
			c.timeout(ctx)
		}
	}
}

func (c *runner) start(ctx actor.Context, req *Request) {
	c.probe, c.stuckOn = nil, nil
	c.lazy = c.lazy[:0]
	if req.Lazy {
		c.lazy = resize(c.lazy, len(req.Peers()))
	}
	c.begin(req, c)
	copy(c.borrow, req.Lend)
	c.findPeers()
	c.routeFrames(true)
	req.startedHere()
	if req.Timeout > 0 {
		if c.timer == nil {
			c.timer = c.rt.NewTimer(ctx.Self(), timedOut{})
		}
		c.timer.Arm(req.Timeout)
	}
	req.Begin()
	if ended, f := c.executor.start(); ended {
		c.finish(ctx, f)
	}
}

// finish ends the operation, which the executor says ended: with f's
// failure, or done.
func (c *runner) finish(ctx actor.Context, f *Fail) {
	if f != nil {
		c.fail(ctx, f)
		return
	}
	c.end(ctx, nil, nil)
}

// AdoptProducer returns the producer of an actor that carries on with a,
// as Producer's does with a request.
func AdoptProducer(rt *actors.Runtime, a *Adoption) actor.Producer {
	return func() actor.Actor { return &runner{rt: rt, adopted: a} }
}

// adopt carries on with an operation that timed out off the actors: it
// takes its frames from the planes from now on, and asks its peers how
// far they got, as for a timeout of its own.
func (c *runner) adopt(ctx actor.Context, a *Adoption) {
	c.executor = a.exec
	c.out = c
	c.probe, c.stuckOn = nil, nil
	c.findPeers()
	c.routeFrames(true)
	if c.timer == nil {
		c.timer = c.rt.NewTimer(ctx.Self(), timedOut{})
	}
	c.startProbe(ctx)
}

// findPeers counts the frames the collective receives from each peer.
func (c *runner) findPeers() {
	c.recvFrom = c.recvFrom[:0]
	if c.req.P2P != nil {
		return
	}
	for _, s := range c.req.Schedule.Steps {
		if !s.Prim.Receives() {
			continue
		}
		if i := slices.IndexFunc(c.recvFrom, func(p peerFrames) bool { return p.peer == s.Peer }); i >= 0 {
			c.recvFrom[i].frames++
		} else {
			c.recvFrom = append(c.recvFrom, peerFrames{peer: s.Peer, frames: 1})
		}
	}
}

// routeFrames routes this operation's inbound frames to self (on): on the
// plane of every peer it receives from, which hands on at once what it
// holds. Off ends the operation's hold on the planes.
func (c *runner) routeFrames(on bool) {
	req := c.req
	var keys [][]link.Key
	if req.P2P != nil && on {
		keys = c.inbound()
	}
	for i, peer := range req.Peers() {
		plane := req.Planes[i]
		if plane == nil { // a lazy collective's peer not linked yet, or done with
			continue
		}
		if !on {
			plane.Detach(c.sink)
			continue
		}
		var err error
		switch {
		case req.P2P != nil && len(keys[i]) == 0:
			continue // it only sends to peer
		case req.P2P != nil:
			c.early, err = plane.AttachMessages(keys[i], c.sink, c.early[:0])
		case c.receivesFrom(peer):
			c.early, err = plane.Attach(req.CollSeq, c.sink, c.early[:0])
		default:
			continue
		}
		c.handOn(peer, err)
	}
}

// handOn hands the sink the frames a plane of peer held (early) and then
// err, the link's failure, if any: after the frames the peer sent before
// it went.
func (c *runner) handOn(peer int, err error) {
	for _, f := range c.early {
		c.sink.Deliver(peer, f)
	}
	clear(c.early)
	if err != nil {
		c.sink.Failed(peer, err)
	}
}

// receivesFrom reports whether the collective receives a frame from peer.
func (c *runner) receivesFrom(peer int) bool {
	return slices.ContainsFunc(c.recvFrom, func(p peerFrames) bool { return p.peer == peer })
}

// peerFrames counts the frames an operation receives from one peer: one
// per receiving step.
type peerFrames struct{ peer, frames int }

// send, sentFunc and offer make the runner its executor's outbox. A frame goes
// around the link once the link has started, onto its lossless
// connection, as an operation run off the actors sends: the peer's plane
// takes it from its transport, and neither link sees it. Before, the
// link sends it, and reports its failure to the rank.
func (c *runner) offer(p int, h transport.Header, data []byte) {
	offer(c.rt, c.req, c.req.Planes[p], h, data)
}

func (c *runner) send(p int, f transport.Frame) error {
	if c.req.Planes[p] == nil {
		c.park(p, f)
		return nil
	}
	if !c.req.Planes[p].TrySend(f) {
		c.req.Planes[p].Post(c.rt.System().Root, c.req.Links[p], c.sends.Get(f))
	}
	return nil
}

// park keeps f, to the p-th peer, until the link to it comes (Linked),
// which it asks the rank for once.
func (c *runner) park(p int, f transport.Frame) {
	c.parked = append(c.parked, parkedFrame{p: p, f: f})
	c.askLink(p)
}

// askLink asks the rank for the link to the p-th peer, unless it did.
func (c *runner) askLink(p int) {
	if !c.lazy[p].asked {
		c.lazy[p].asked = true
		c.rt.System().Root.Send(c.parent, &NeedLink{Seq: c.req.Seq, Peer: c.req.Peers()[p]})
	}
}

func (c *runner) parks() bool { return len(c.parked) > 0 }

// linked takes the link to a peer of the lazy collective: it attaches
// to its plane, unless it is done with the peer, and sends the frames
// that waited for it.
func (c *runner) linked(m *Linked) {
	req := c.req
	p, ok := req.peerIndex(m.Peer)
	if !ok || req.Planes[p] != nil {
		return
	}
	if c.lazy[p].done && !c.lazy[p].asked {
		// Made as the peer connected, after the collective was done with
		// it: for the peer's next operation, which may hold it to the end
		// and wait there for this rank's next. Released now, it would
		// hold this rank's next operation back until the peer's ended.
		return
	}
	req.Links[p], req.Lend[p], req.Planes[p] = m.Link, m.Lend, m.Plane
	c.borrow[p] = m.Lend
	if !c.lazy[p].done && c.receivesFrom(m.Peer) {
		var err error
		c.early, err = m.Plane.Attach(req.CollSeq, c.sink, c.early[:0])
		c.handOn(m.Peer, err)
	}
	c.parked = slices.DeleteFunc(c.parked, func(w parkedFrame) bool {
		if w.p == p {
			c.send(p, w.f)
			return true
		}
		return false
	})
	c.lazy[p].asked = false
	if c.lazy[p].done {
		c.doneWith(p, true)
	}
}

// doneWith lets go of the link to the p-th peer, which the collective
// has no use for until its next run with the peer, or ever (final), for
// the rank to release: once its frames left, if they still wait for it.
func (c *runner) doneWith(p int, final bool) {
	c.lazy[p].done = c.lazy[p].done || final
	if c.req.Planes[p] == nil {
		return // Linked sends what waits, then comes back here
	}
	c.unlink(p)
	c.rt.System().Root.Send(c.parent, &DoneWith{Seq: c.req.Seq, Peer: c.req.Peers()[p]})
}

// unlinked lets go of the link to the p-th peer, which the peer's rank
// released first while this collective still had steps with it, and
// asks for a new one at once if it waits for a frame of the peer's: with
// no link, it would neither watch the peer nor hear its word of a
// failure. A send to the peer links it again anyway.
func (c *runner) unlinked(p int) {
	c.unlink(p)
	if !c.lazy[p].done && slices.Contains(c.prog.Waiting(nil), c.req.Peers()[p]) {
		c.askLink(p)
	}
}

// unlink detaches from the p-th peer's plane and forgets its link: a
// send to the peer asks for a new one, and the peer's frames come on
// the next link the rank lends.
func (c *runner) unlink(p int) {
	c.req.Planes[p].Detach(c.sink)
	c.req.Links[p], c.req.Planes[p] = nil, nil
}

// sentFunc returns the Frame.Sent of a lent send of step i, which tells
// the runner the step is done; one per step index, kept for later runs.
func (c *runner) sentFunc(i int) func() {
	for len(c.sentFuncs) <= i {
		self, sys, msg := c.sink.To(), c.rt.System().Root, any(sendDone{step: len(c.sentFuncs)})
		c.sentFuncs = append(c.sentFuncs, func() { sys.Send(self, msg) })
	}
	return c.sentFuncs[i]
}

// fail ends the operation with err. A failure this rank detected in what a
// peer sent (tell), or a peer's report of one (forward), goes on to the
// operation's peers, so that all of them fail instead of waiting for a
// message that will not come.
func (c *runner) fail(ctx actor.Context, m *Fail) {
	req := c.req
	report := m.reportFor(req)
	if report != nil {
		TellFailure(ctx, req, report)
	}
	c.end(ctx, m.errorOf(req), report)
}

// TellFailure sends a ControlFailed report about req to req's peers.
func TellFailure(ctx actor.Context, req *Request, report []byte) {
	for i, l := range req.Links {
		if l == nil {
			continue // a lazy collective's peer not linked, or done with
		}
		link.SendControl(ctx, l, req.Planes[i], ControlFrame(req.CommID, req.CollSeq, ControlFailed, report))
	}
}

// end completes the operation and tells the parent. After a failure the
// runner stops; after a success it waits for the next operation. The
// planes hear how it ended (Request.endedHere): with failure, the report
// its peers got, if any.
func (c *runner) end(ctx actor.Context, err error, failure []byte) {
	req := c.req
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.probeTimer != nil {
		c.probeTimer.Stop()
	}
	req.endedHere(err == nil, failure)
	c.routeFrames(false)
	for _, w := range c.parked {
		transport.Release(w.f)
	}
	clear(c.parked)
	c.parked = c.parked[:0]
	c.close()
	c.finished = Finished{Seq: req.Seq, Err: err, CollSeq: req.CollSeq, StuckOn: c.stuckOn}
	req.End(err)
	ctx.Send(ctx.Parent(), &c.finished)
	if err != nil {
		// The timers' armings may stay queued past the actor's stop (Close).
		for _, t := range []*actors.Timer{c.timer, c.probeTimer} {
			if t != nil {
				t.Close()
			}
		}
		ctx.Stop(ctx.Self())
	}
}
