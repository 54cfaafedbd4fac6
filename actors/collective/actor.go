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

// Props returns the Props of the actor that runs req.
func Props(rt *actors.Runtime, req *Request) *actor.Props {
	return rt.Props(func() actor.Actor { return &runner{rt: rt, req: req} })
}

type timedOut struct{}

// sendDone says the transport no longer reads a borrowed send's payload.
type sendDone struct{ step int }

// lendMin is the smallest send whose payload the transport borrows from
// the operation's memory instead of copying: above it the copy costs more
// than the extra message that says the send is done.
const lendMin = 64 << 10

type runner struct {
	rt  *actors.Runtime
	req *Request

	prog      *algorithms.Progress
	ready     []int
	held      []transport.Frame // the frame of each receiving step, from its arrival until the step runs
	scratch   [][]byte
	elemSize  int
	stopTimer func() bool
	recvFrom  []peerFrames // found at start
	probe     *probe
	lent      int   // sends whose payload the transport still reads
	stuckOn   []int // the ranks it waited for when it timed out
	ended     bool
}

func (c *runner) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(sendDone); ok {
		c.lent--
		if !c.ended {
			c.ready = c.prog.Complete(m.step, c.ready)
			c.run(ctx)
		}
		return
	}
	if c.ended {
		if d, ok := ctx.Message().(*link.Delivered); ok {
			transport.Release(d.Frame)
		}
		return
	}
	switch m := ctx.Message().(type) {
	case *link.Delivered:
		c.arrive(ctx, m)
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
		c.startProbe(ctx)
	case *Probe:
		c.answerProbe(ctx, m.Peer)
	case *ProbeReply:
		c.probeReplied(ctx, m)
	case probeOver:
		c.timeout(ctx)
	case *actor.Started:
		c.start(ctx)
	}
}

func (c *runner) start(ctx actor.Context) {
	req := c.req
	c.elemSize = req.DType.Size()
	c.prog = algorithms.NewProgress(req.Schedule)
	c.held = make([]transport.Frame, len(req.Schedule.Steps))
	c.scratch = make([][]byte, len(req.Schedule.Scratch))
	for i, n := range req.Schedule.Scratch {
		if !req.Phantom {
			c.scratch[i] = transport.GetBuffer(n * c.elemSize)
		}
	}
	c.routeFrames(ctx, true)
	if req.Timeout > 0 {
		c.stopTimer = c.rt.After(req.Timeout, ctx.Self(), timedOut{})
	}
	if req.Started != nil {
		req.Started()
	}
	c.ready = c.prog.Start(c.ready[:0])
	c.run(ctx)
}

// routeFrames routes this operation's inbound frames to self on every link
// it receives from, each route counting the frames that will come (on), or
// ends the routes before their frames have all come (off).
func (c *runner) routeFrames(ctx actor.Context, on bool) {
	req := c.req
	if req.P2P != nil {
		for _, m := range req.P2P {
			if !m.Send {
				key := link.Key{Kind: transport.PointToPoint, Seq: m.Ordinal, Tag: m.Tag}
				c.toLink(ctx, m.Peer, key, 1, on)
			}
		}
		return
	}
	if c.recvFrom == nil {
		c.recvFrom = []peerFrames{}
		for _, s := range req.Schedule.Steps {
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
	key := link.Key{Kind: transport.Collective, Seq: req.CollSeq}
	for _, p := range c.recvFrom {
		c.toLink(ctx, p.peer, key, p.frames, on)
	}
}

// peerFrames counts the frames an operation receives from one peer: one
// per receiving step.
type peerFrames struct{ peer, frames int }

func (c *runner) toLink(ctx actor.Context, peer int, key link.Key, frames int, on bool) {
	l, _ := c.req.link(peer)
	if on {
		ctx.Send(l, &link.Route{Key: key, To: ctx.Self(), Frames: frames})
	} else {
		ctx.Send(l, &link.Unroute{Key: key})
	}
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
			self, sys := ctx.Self(), c.rt.System.Root
			f.Payload, f.Sent = src, func() { sys.Send(self, sendDone{step: i}) }
			c.lent++
		default:
			f.Payload = transport.GetBuffer(len(src))
			copy(f.Payload, src)
		}
		ctx.Send(l, &link.Send{Frame: f})
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

func (c *runner) end(ctx actor.Context, err error) {
	c.ended = true
	if c.stopTimer != nil {
		c.stopTimer()
	}
	if c.probe != nil {
		c.probe.stopTimer()
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
	c.scratch = nil
	c.req.Done(err)
	ctx.Send(ctx.Parent(), &Finished{Seq: c.req.Seq, Err: err, CollSeq: c.req.CollSeq, StuckOn: c.stuckOn})
	ctx.Stop(ctx.Self())
}
