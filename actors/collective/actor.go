package collective

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/transport"
)

// Props returns the Props of the actor that runs req. Once req has
// succeeded, the actor runs each *Request its parent sends it, one at a
// time, keeping its buffers and the Progress of recent schedules: an
// operation then costs no spawn. After an operation that failed it stops,
// as frames, payloads it lent and timers of that operation may still be on
// their way to it; the parent runs the next one on a new actor. A
// successful operation leaves only its timeout behind, which Timer.Fired
// tells apart.
func Props(rt *actors.Runtime, req *Request) *actor.Props {
	return rt.Props(func() actor.Actor { return &runner{rt: rt, first: req} })
}

type timedOut struct{}

// sendDone says the transport no longer reads a borrowed send's payload.
type sendDone struct{ step int }

// lendMin is the smallest send whose payload the transport borrows from
// the operation's memory instead of copying: above it the copy costs more
// than the extra message that says the send is done.
const lendMin = 64 << 10

type runner struct {
	rt    *actors.Runtime
	first *Request // run once started
	req   *Request // the running operation; nil between operations

	prog     *algorithms.Progress
	progs    []*algorithms.Progress // of recent schedules, most recent first
	ready    []int
	held     []transport.Frame // the frame of each receiving step, from its arrival until the step runs
	scratch  [][]byte
	elemSize int
	timer    *actors.Timer // the operation's timeout
	// probeTimer bounds the wait for a probe's answers.
	probeTimer *actors.Timer
	recvFrom   []peerFrames  // found at start
	routes     []link.Route  // the messages of this operation's routes
	sent       []func()      // by step: a lent send's Frame.Sent, made once
	sends      link.SendPool // the messages of its frames
	finished   Finished      // the parent reads it before it sends the next operation
	probe      *probe
	lent       int   // sends whose payload the transport still reads
	stuckOn    []int // the ranks it waited for when it timed out
}

// progsKept bounds the Progress values a runner keeps for reuse.
const progsKept = 8

func (c *runner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.start(ctx, c.first)
		c.first = nil
		return
	case *Request:
		c.start(ctx, m)
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
		c.lent--
		c.ready = c.prog.Complete(m.step, c.ready)
		c.run(ctx)
	case *link.Delivered:
		c.arrive(ctx, m)
		m.Recycle()
	case *Fail:
		c.fail(ctx, m)
	case *link.Failed:
		// Frames the peer sent before it went away came first: fail only if
		// one is still missing. The rank knows best why the peer went (it
		// may have failed because another rank did), so it says how.
		if slices.Contains(c.prog.Waiting(nil), m.Peer) {
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
	c.req, c.probe, c.stuckOn = req, nil, nil
	c.elemSize = req.DType.Size()
	c.prog = c.progress(req.Schedule)
	c.held = resize(c.held, len(req.Schedule.Steps))
	c.scratch = resize(c.scratch, len(req.Schedule.Scratch))
	for i, n := range req.Schedule.Scratch {
		if !req.Phantom {
			c.scratch[i] = transport.GetBuffer(n * c.elemSize)
		}
	}
	c.findPeers()
	c.routeFrames(ctx, true)
	if req.Timeout > 0 {
		if c.timer == nil {
			c.timer = c.rt.NewTimer(ctx.Self(), timedOut{})
		}
		c.timer.Arm(req.Timeout)
	}
	req.Begin()
	c.ready = c.prog.Start(c.ready[:0])
	c.run(ctx)
}

// progress returns a fresh run of s, reusing the Progress of an earlier
// run of s if the runner kept one.
func (c *runner) progress(s *algorithms.Schedule) *algorithms.Progress {
	for i, p := range c.progs {
		if p.Schedule() == s {
			copy(c.progs[1:i+1], c.progs[:i])
			c.progs[0] = p
			p.Reset()
			return p
		}
	}
	p := algorithms.NewProgress(s)
	if len(c.progs) < progsKept {
		c.progs = append(c.progs, nil)
	}
	copy(c.progs[1:], c.progs)
	c.progs[0] = p
	return p
}

// resize returns s with n empty entries, reusing its array if it can.
func resize[T any](s []T, n int) []T {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
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

// routeFrames routes this operation's inbound frames to self on every link
// it receives from, each route counting the frames that will come (on), or
// ends the routes before their frames have all come (off).
func (c *runner) routeFrames(ctx actor.Context, on bool) {
	req := c.req
	if on {
		c.routes = c.routes[:0]
	}
	if req.P2P != nil {
		for _, m := range req.P2P {
			if !m.Send {
				key := link.Key{Kind: transport.PointToPoint, Seq: m.Ordinal, Tag: m.Tag}
				c.toLink(ctx, m.Peer, key, 1, on)
			}
		}
		return
	}
	key := link.Key{Kind: transport.Collective, Seq: req.CollSeq}
	for _, p := range c.recvFrom {
		c.toLink(ctx, p.peer, key, p.frames, on)
	}
}

// peerFrames counts the frames an operation receives from one peer: one
// per receiving step.
type peerFrames struct{ peer, frames int }

// toLink routes or unroutes key at the link to peer. The next operation
// reuses the Route messages: by the time this one succeeded, the links
// have read them (they delivered its frames), and a failed one ends the
// runner. An array that grows leaves the messages sent from the old one
// alone.
func (c *runner) toLink(ctx actor.Context, peer int, key link.Key, frames int, on bool) {
	l, _ := c.req.link(peer)
	if !on {
		ctx.Send(l, &link.Unroute{Key: key})
		return
	}
	c.routes = append(c.routes, link.Route{Key: key, To: ctx.Self(), Frames: frames})
	ctx.Send(l, &c.routes[len(c.routes)-1])
}

func (c *runner) arrive(ctx actor.Context, d *link.Delivered) {
	req := c.req
	h := d.Frame.Header
	if h.Sig != req.Sig {
		transport.Release(d.Frame)
		c.fail(ctx, &Fail{Err: commerr.Invalid("arguments differ across ranks: %s", Mismatch(h.Sig, req.Sig, d.Peer)), Ranks: []int{d.Peer}, Tell: true})
		return
	}
	tag := int(h.Tag)
	if req.P2P != nil {
		tag = c.p2pTag(d.Peer, h)
	}
	var step int
	var err error
	c.ready, step, err = c.prog.Arrive(d.Peer, tag, c.ready)
	if err != nil {
		transport.Release(d.Frame)
		c.fail(ctx, &Fail{Err: commerr.Invalid("unexpected message %d from rank %d: %v", h.Tag, d.Peer, err), Ranks: []int{d.Peer}, Tell: true})
		return
	}
	if want := req.Schedule.Steps[step].Dst.Len * c.elemSize; len(d.Frame.Payload) != want {
		transport.Release(d.Frame)
		c.fail(ctx, &Fail{Err: commerr.Invalid("rank %d sent %d bytes where this rank expects %d: sizes differ across ranks", d.Peer, len(d.Frame.Payload), want), Ranks: []int{d.Peer}, Tell: true})
		return
	}
	// A payload lent by the transport is read in place: the step runs
	// from it and gives it back.
	c.held[step] = d.Frame
	c.run(ctx)
}

// p2pTag maps an inbound point-to-point frame to the schedule tag of the
// receiving step it was routed for.
func (c *runner) p2pTag(peer int, h transport.Header) int {
	for i, m := range c.req.P2P {
		if !m.Send && m.Peer == peer && m.Ordinal == h.Seq && m.Tag == h.Tag {
			return c.req.Schedule.Steps[i].Tag
		}
	}
	return -1
}

func (c *runner) run(ctx actor.Context) {
	for len(c.ready) > 0 {
		i := c.ready[len(c.ready)-1]
		c.ready = c.ready[:len(c.ready)-1]
		if c.execute(ctx, i) {
			c.ready = c.prog.Complete(i, c.ready)
		}
	}
	if c.prog.Done() {
		c.finish(ctx)
	}
}

// execute runs step i and reports whether it is complete. A large send
// lends its region to the transport and completes when sendDone comes
// back: until then, the schedule's dependencies keep later steps from
// writing that region.
func (c *runner) execute(ctx actor.Context, i int) bool {
	s := &c.req.Schedule.Steps[i]
	if c.req.Phantom && s.Prim != algorithms.Send {
		c.release(i) // a phantom payload carries nothing to copy or reduce
		return true
	}
	switch s.Prim {
	case algorithms.Send:
		src := c.region(s.Src)
		f := transport.Frame{Header: c.req.header(i)}
		l, lend := c.req.link(s.Peer)
		switch {
		case c.req.Phantom:
			f.Payload = src
		case len(src) >= lendMin && lend:
			f.Payload, f.Sent = src, c.sentFunc(ctx, i)
			c.lent++
		default:
			f.Payload = transport.GetBuffer(len(src))
			copy(f.Payload, src)
		}
		ctx.Send(l, c.sends.Get(f))
		return f.Sent == nil
	case algorithms.Recv:
		copy(c.region(s.Dst), c.held[i].Payload)
		c.release(i)
	case algorithms.RecvReduce:
		dst := c.region(s.Dst)
		reduce.Combine(c.req.Reduce, c.req.DType, dst, c.region(s.Src), c.held[i].Payload)
		c.release(i)
	case algorithms.Copy:
		copy(c.region(s.Dst), c.region(s.Src))
	case algorithms.Accumulate:
		dst := c.region(s.Dst)
		reduce.Combine(c.req.Reduce, c.req.DType, dst, dst, c.region(s.Src))
	}
	return true
}

// sentFunc returns the Frame.Sent of a lent send of step i, which tells
// the runner the step is done; one per step index, kept for later runs.
func (c *runner) sentFunc(ctx actor.Context, i int) func() {
	for len(c.sent) <= i {
		self, sys, msg := ctx.Self(), c.rt.System().Root, any(sendDone{step: len(c.sent)})
		c.sent = append(c.sent, func() { sys.Send(self, msg) })
	}
	return c.sent[i]
}

func (c *runner) release(i int) {
	transport.Release(c.held[i])
	c.held[i] = transport.Frame{}
}

func (c *runner) region(r algorithms.Region) []byte {
	if c.req.Phantom {
		return transport.Phantom(r.Len * c.elemSize)
	}
	var block []byte
	switch r.Buf {
	case algorithms.Input:
		block = c.req.In[r.Block]
	case algorithms.Output:
		block = c.req.Out[r.Block]
	default:
		block = c.scratch[r.Block]
	}
	return block[r.Off*c.elemSize : (r.Off+r.Len)*c.elemSize]
}

func (c *runner) finish(ctx actor.Context) {
	req := c.req
	if !req.Phantom {
		for _, b := range req.Results {
			reduce.Finish(req.Reduce, req.DType, req.Out[b], req.Size)
		}
	}
	c.end(ctx, nil)
}

// fail ends the operation with err. A failure this rank detected in what a
// peer sent (tell), or a peer's report of one (forward), goes on to the
// operation's peers, so that all of them fail instead of waiting for a
// message that will not come.
func (c *runner) fail(ctx actor.Context, m *Fail) {
	req := c.req
	if req.P2P == nil {
		switch {
		case m.Forward != nil:
			TellFailure(ctx, req, m.Forward)
		case m.Tell:
			TellFailure(ctx, req, EncodeFailure(req.Rank, m.Err.Error()))
		}
	}
	c.end(ctx, &commerr.OpError{Comm: req.Comm, Op: req.Op, Seq: req.Seq, Rank: req.Rank, Ranks: m.Ranks, Err: m.Err})
}

// TellFailure sends a ControlFailed report about req to req's peers.
func TellFailure(ctx actor.Context, req *Request, report []byte) {
	for _, l := range req.Links {
		ctx.Send(l, ControlFrame(req.CommID, req.CollSeq, ControlFailed, report))
	}
}

// end completes the operation and tells the parent. After a failure the
// runner stops; after a success it waits for the next operation.
func (c *runner) end(ctx actor.Context, err error) {
	req := c.req
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.probeTimer != nil {
		c.probeTimer.Stop()
	}
	if err != nil { // else every route has had its frames, and is gone
		c.routeFrames(ctx, false)
	}
	for i, f := range c.held {
		if f.Payload != nil || f.Sent != nil {
			c.release(i)
		}
	}
	if c.lent == 0 { // else a transport may still read scratch: leave it to the collector
		for _, s := range c.scratch {
			transport.PutBuffer(s)
		}
	}
	clear(c.scratch)
	c.req = nil
	c.finished = Finished{Seq: req.Seq, Err: err, CollSeq: req.CollSeq, StuckOn: c.stuckOn}
	req.End(err)
	ctx.Send(ctx.Parent(), &c.finished)
	if err != nil {
		ctx.Stop(ctx.Self())
	}
}
