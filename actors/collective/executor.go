package collective

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/transport"
)

// executor runs one operation's schedule: a state machine that does no
// I/O and keeps no time. Its driver hands it events, one at a time, in
// order:
//
//	begin(req, out)   set up; take(peer, f) then holds each frame the
//	                  operation's planes kept for it, as arrive does
//	start()           run the steps ready at first
//	arrive(peer, f)   a frame of the operation from peer
//	sent(i)           the transport gave back the region send step i lent
//	needs(peer)       whether a peer whose connection ended is still
//	                  needed: then fail with lost(peer, err)
//	movable(), stuck() on a timeout: whether the operation may move to
//	                  another driver, or fails where it is
//	close()           let go of the operation, ended
//
// Every step that became ready runs before the event returns: its
// frames go to the outbox as they are made, and the event returns
// whether the operation ended, with the failure that ended it, if one
// did. Direct drives an executor on whichever goroutine brings its
// events, the collective actor on its own, and the simulator's event
// loop drives both: the one schedule runs the same way in each.
type executor struct {
	req      *Request
	out      outbox
	prog     *algorithms.Progress
	progs    []*algorithms.Progress // of recent schedules, most recent first
	ready    []int
	held     heldFrames
	mapped   []bool // by receiving step: held's payload is a peer's memory, mapped
	unready  []int  // receiving steps that hold a peer's memory and could not run yet
	reading  []bool // by sending step: the peer reads this rank's memory, mapped
	scratch  [][]byte
	elemSize int
	// borrow and maps say, by peer in Request.Peers order, whether its
	// connection borrows large payloads and whether the peer maps this
	// rank's registered memory. The driver sets them after begin.
	borrow, maps []bool
	lent         int   // sends whose region a transport reads
	reads        int   // registered sends whose memory a peer reads
	acks         []int // steps whose peers are to hear their memory was read
	unsent       []int // peers a send to did not go: their connection ended
	// keys holds, by peer in Request.Peers order, the keys of the
	// point-to-point frames the operation receives from it (inbound).
	keys     []link.Key
	peerKeys [][]link.Key
	// runs are a lazy collective's steps with each peer, by which its
	// outbox, rel, lets go of the peer's link; rel is nil for any other.
	runs runs
	rel  releaser
}

// releaser is the outbox of a lazy collective (Request.Lazy): told of
// the p-th peer the collective has no use for until its next run with
// it, or ever (final), it lets go of the peer's link.
//
// Its sends to a peer it has no link to wait for one: the collective does
// not end before they went (parks).
type releaser interface {
	doneWith(p int, final bool)
	parks() bool
}

// outbox is where an executor's frames go, and how its lent sends come
// back: its driver.
type outbox interface {
	// send gives f to the p-th of the request's peers (Request.Peers).
	// An error says the peer's connection ended: the driver hears of it
	// in order with what its rank heard before (needs, lost).
	send(p int, f transport.Frame) error
	// sentFunc returns the Frame.Sent of a lent send of step i, which
	// brings sent(i) back to the executor through the driver.
	sentFunc(i int) func()
	// offer offers the p-th peer the message h heads, of data, which
	// goes once the peer clears it (link.Plane.Offer): the request's
	// Work waits for it.
	offer(p int, h transport.Header, data []byte)
}

// take accepts f from peer, which the step it is for may now run from,
// but runs nothing: a step's frame, or the peer's word that it read a
// registered send, which completes the send.
func (e *executor) take(peer int, f transport.Frame) *Fail {
	if e.req.P2P != nil && f.Header.Tag&link.TagAnnounce != 0 {
		return e.announced(peer, f)
	}
	read, fail := e.accept(peer, f)
	if fail != nil {
		return fail
	}
	if read >= 0 {
		e.reads--
		e.complete(read)
	}
	return nil
}

// start runs the steps ready once the operation starts.
func (e *executor) start() (ended bool, fail *Fail) {
	e.ready = e.prog.Start(e.ready)
	return e.run()
}

// arrive takes f from peer and runs what became ready. A frame of
// another collective, which a plane handed on just before an earlier
// one let go of it, is dropped.
func (e *executor) arrive(peer int, f transport.Frame) (ended bool, fail *Fail) {
	if e.req.P2P == nil && f.Header.Seq != e.req.CollSeq {
		transport.Release(f)
		return false, nil
	}
	if fail := e.take(peer, f); fail != nil {
		return true, fail
	}
	return e.run()
}

// sent completes send step i, whose lent region the transport gave back.
func (e *executor) sent(i int) (ended bool, fail *Fail) {
	e.lent--
	e.complete(i)
	return e.run()
}

// needs reports whether the operation still needs peer: a frame from
// it, or its read of this rank's registered memory. Frames a peer sent
// before its connection ended came first.
func (e *executor) needs(peer int) bool {
	if slices.Contains(e.prog.Waiting(nil), peer) || slices.Contains(e.unsent, peer) {
		return true
	}
	for i, s := range e.req.Schedule.Steps {
		if e.reading[i] && s.Peer == peer {
			return true
		}
	}
	return false
}

// lost is the failure of the operation, whose peer's connection err
// ended. A peer that finalized early is a mismatch, which the ranks
// waiting on this one learn from it: they see no failure.
func (e *executor) lost(peer int, err error) *Fail {
	err = LostPeerError(peer, e.req, err)
	return &Fail{Err: err, Ranks: []int{peer}, Tell: errors.Is(err, commerr.ErrInvalidArgument)}
}

// movable reports whether the operation may move to another driver:
// no transport and no peer still reads its memory, whose word that it
// is done would come back to this one.
func (e *executor) movable() bool { return e.lent == 0 && e.reads == 0 }

// stuck is the failure of an operation that timed out, naming the ranks
// it waits for.
func (e *executor) stuck() *Fail {
	waiting := e.prog.Waiting(nil)
	return &Fail{Err: timeoutError(e.req, waiting), Ranks: waiting, Tell: true}
}

// timeoutError says that req timed out waiting for ranks.
func timeoutError(req *Request, waiting []int) error {
	return fmt.Errorf("%w after %v waiting for ranks %v", commerr.ErrTimeout, req.Timeout, waiting)
}

// run runs the steps that are ready, and reports whether the operation
// ended: all of them ran, or one failed. While it waits, it lets go of
// the peers' memory it holds (letGo).
func (e *executor) run() (ended bool, fail *Fail) {
	for len(e.ready) > 0 {
		i := e.ready[len(e.ready)-1]
		e.ready = e.ready[:len(e.ready)-1]
		done, fail := e.execute(i)
		if fail != nil {
			return true, fail
		}
		if done {
			e.complete(i)
		}
	}
	if e.prog.Done() && len(e.unsent) == 0 && !(e.rel != nil && e.rel.parks()) {
		e.results()
		return true, nil
	}
	e.acks = e.letGo(e.acks[:0])
	for _, i := range e.acks {
		p, _ := e.req.peerIndex(e.req.Schedule.Steps[i].Peer)
		e.sendTo(p, e.readDone(i))
	}
	return false, nil
}

// complete completes step i, readying the steps that waited for it, and
// tells a lazy collective's outbox once it has no use for i's peer's
// link for a while (runs).
func (e *executor) complete(i int) {
	e.ready = e.prog.Complete(i, e.ready)
	if e.rel == nil {
		return
	}
	if p, final, release := e.runs.complete(i); release {
		e.rel.doneWith(p, final)
	}
}

// sendTo sends f to the p-th peer, and reports whether it went. Where
// the peer's connection ended, the operation waits for its driver's word
// that the peer is gone (needs, lost), which comes after what its rank
// heard before: a peer's report that another rank failed, which is the
// rank to name, wins over the end of the connection it came on. The
// operation does not end before that word, even with all its steps run.
func (e *executor) sendTo(p int, f transport.Frame) bool {
	if e.out.send(p, f) == nil {
		return true
	}
	e.unsent = append(e.unsent, e.req.Peers()[p])
	return false
}

// execute runs step i and reports whether it is complete: a large send
// lends its region to the transport and completes when the transport
// gives it back, a registered one when the peer says it read it. Until
// then, the schedule's dependencies keep later steps from writing that
// region.
func (e *executor) execute(i int) (bool, *Fail) {
	s := &e.req.Schedule.Steps[i]
	p, _ := e.req.peerIndex(s.Peer)
	if s.Prim != algorithms.Send {
		e.local(i)
		if f, ok := e.readFrame(i); ok {
			e.sendTo(p, f)
		}
		return true, nil
	}
	src := e.region(s.Src)
	if e.req.P2P != nil && len(src) > RendezvousMin {
		e.offer(i, p, src)
		return true, nil
	}
	f, registered := transport.Frame{}, false
	// A message goes as a payload: sent as a descriptor, it would wait
	// for its receiver to read it, a rendezvous that holds up the
	// operations issued after it (a ring of sends, each followed by a
	// receive, would deadlock).
	if e.maps[p] && e.req.P2P == nil {
		f, registered = e.registeredFrame(i, src)
	}
	if !registered {
		f = e.sendFrame(i, src, e.borrow[p])
	}
	switch {
	case registered:
		e.reads++
	case f.Sent != nil:
		e.lent++
	}
	if !e.sendTo(p, f) {
		return false, nil
	}
	return f.Sent == nil && !registered, nil
}

// progsKept bounds the Progress values an executor keeps for reuse.
const progsKept = 8

// offer offers message step i sends, of data, to the p-th peer, and
// announces it: the step is done, and the Work waits for the data to go
// (a rendezvous, link.Offer).
func (e *executor) offer(i, p int, data []byte) {
	h := e.req.header(i)
	e.out.offer(p, h, data)
	e.sendTo(p, link.Announcement(h, len(data)))
}

// announced takes a peer's announcement of a large message the
// operation receives, and clears it: the peer sends it now that it has
// somewhere to go.
func (e *executor) announced(peer int, f transport.Frame) *Fail {
	n, ok := link.AnnouncedLength(f.Payload)
	h := f.Header
	transport.Release(f)
	h.Tag &^= link.TagMarks
	i := e.p2pStep(peer, h)
	if i < 0 || !ok {
		return &Fail{Err: commerr.Invalid("unexpected message %d from rank %d", h.Tag, peer), Ranks: []int{peer}}
	}
	if want := e.req.Schedule.Steps[i].Dst.Len * e.elemSize; n != want {
		return &Fail{Err: commerr.Invalid("rank %d sends %d bytes where this rank expects %d: sizes differ across ranks", peer, n, want), Ranks: []int{peer}}
	}
	p, _ := e.req.peerIndex(peer)
	e.sendTo(p, link.Clearance(h))
	return nil
}

// begin sets e up to run req, sending to out.
func (e *executor) begin(req *Request, out outbox) {
	e.req, e.out = req, out
	e.ready, e.unsent = e.ready[:0], e.unsent[:0]
	e.borrow = resize(e.borrow, len(req.Peers()))
	e.maps = resize(e.maps, len(req.Peers()))
	e.elemSize = req.DType.Size()
	e.prog = e.progress(req.Schedule)
	e.held = e.held[:0]
	e.mapped = resize(e.mapped, len(req.Schedule.Steps))
	e.unready = e.unready[:0]
	e.reading = resize(e.reading, len(req.Schedule.Steps))
	e.rel = nil
	if rel, ok := out.(releaser); ok && req.Lazy && req.P2P == nil {
		e.rel = rel
		e.runs.plan(req.Schedule, len(req.Peers()), func(peer int) int {
			p, _ := req.peerIndex(peer)
			return p
		})
	}
	e.scratch = resize(e.scratch, len(req.Schedule.Scratch))
	for i, n := range req.Schedule.Scratch {
		if !req.Phantom {
			e.scratch[i] = transport.GetBuffer(n * e.elemSize)
		}
	}
}

// progress returns a fresh run of s, reusing the Progress of an earlier
// run of s if e kept one.
func (e *executor) progress(s *algorithms.Schedule) *algorithms.Progress {
	for i, p := range e.progs {
		if p.Schedule() == s {
			copy(e.progs[1:i+1], e.progs[:i])
			e.progs[0] = p
			p.Reset()
			return p
		}
	}
	p := algorithms.NewProgress(s)
	if len(e.progs) < progsKept {
		e.progs = append(e.progs, nil)
	}
	copy(e.progs[1:], e.progs)
	e.progs[0] = p
	return p
}

// resize returns s with n empty entries, reusing its array if it can.
func resize[T any](s []T, n int) []T {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
}

// local runs step i, which does not send.
func (e *executor) local(i int) {
	s := &e.req.Schedule.Steps[i]
	if s.Prim.Receives() {
		f := e.held.take(i)
		switch {
		case e.req.Phantom: // a phantom payload carries nothing to copy or reduce
		case s.Prim == algorithms.Recv:
			copy(e.region(s.Dst), f.Payload)
		default:
			reduce.Combine(e.req.Reduce, e.req.DType, e.region(s.Dst), e.region(s.Src), f.Payload)
		}
		e.giveBack(i, f)
		return
	}
	if e.req.Phantom {
		return
	}
	switch s.Prim {
	case algorithms.Copy:
		copy(e.region(s.Dst), e.region(s.Src))
	case algorithms.Accumulate:
		dst := e.region(s.Dst)
		reduce.Combine(e.req.Reduce, e.req.DType, dst, dst, e.region(s.Src))
	}
}

// giveBack returns f, receiving step i's frame, to its transport, unless
// it is a peer's mapped memory, which is nobody's to give back.
func (e *executor) giveBack(i int, f transport.Frame) {
	if !e.mapped[i] {
		transport.Release(f)
	}
}

func (e *executor) region(r algorithms.Region) []byte {
	if e.req.Phantom {
		return transport.Phantom(r.Len * e.elemSize)
	}
	var block []byte
	switch r.Buf {
	case algorithms.Input:
		block = e.req.In[r.Block]
	case algorithms.Output:
		block = e.req.Out[r.Block]
	default:
		block = e.scratch[r.Block]
	}
	return block[r.Off*e.elemSize : (r.Off+r.Len)*e.elemSize]
}

// results finishes the reductions whose results are on this rank (Avg,
// PreMulSum).
func (e *executor) results() {
	req := e.req
	if !req.Phantom {
		for _, b := range req.Results {
			reduce.Finish(req.Reduce, req.DType, req.Out[b], req.Size)
		}
	}
}

// close lets go of the operation, which ended: of the frames still
// held, of the request and, unless a transport still reads some of it,
// of the scratch memory. It reports whether a transport still does: its
// sends come back through drained then. A peer that still reads a
// registered send's memory reads the caller's tensor, which a failed
// operation leaves undefined: it is not waited for.
func (e *executor) close() (lending bool) {
	for _, h := range e.held {
		e.giveBack(h.step, h.frame)
	}
	clear(e.held)
	e.held = e.held[:0]
	lending = e.lent > 0
	if !lending { // else a transport may still read scratch: leave it to the collector
		for _, s := range e.scratch {
			transport.PutBuffer(s)
		}
	}
	clear(e.scratch)
	e.req, e.reads = nil, 0
	return lending
}

// drained counts a lent send the transport gave back after its
// operation ended, and reports whether none is left.
func (e *executor) drained() bool {
	e.lent--
	return e.lent == 0
}
