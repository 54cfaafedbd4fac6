package collective

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/fifo"
	"github.com/gocomms/gocomms/transport"
)

// Direct runs a rank's operations (collectives, point-to-point operations
// and batches) outside the actors, one at a time, while the rank lends it
// its turn (see rank.Lease): on the goroutine that issues
// one, then on whichever goroutine brings what it waits for — a
// transport's, delivering a frame to a plane; the clock's, for its
// timeout; a caller's that waits and polls. It is an actor without a
// goroutine of its own: the events of its operations queue, and whoever
// posts one while nobody handles them handles them all, in order, one at
// a time, so that a send that delivers at once to a peer in the same
// process, whose reply comes back on the same goroutine, only queues.
//
// Operations issued while one runs here queue behind it, numbered in
// issue order, and each starts as the one before it ends, on whichever
// goroutine ended that: an async loop runs back to back with no mailbox
// in between, as a stream of NCCL kernels does.
//
// Its frames go to the peers' planes and come from them (link.Plane), past
// the link actors, over lossless connections only. Whatever leaves that
// path ends the operation, and the actors take the communicator from
// there: a peer's connection that fails or breaks, a mismatched frame, a
// timeout, a cancel, the rank's word that the communicator broke.
type Direct struct {
	rt    *actors.Runtime
	owner Owner

	mu      sync.Mutex
	events  fifo.Queue[directEvent]
	driving bool

	// running is Seq+1 of the operation running, 0 between operations.
	running atomic.Uint64
	// The operations given to Start whose Seq+1 lie in (ended, last] are
	// here, running or queued: those between start one after another.
	last, ended atomic.Uint64
	// draining says a failed operation's transport still reads some of
	// its memory: no other may start until it has given it all back.
	draining atomic.Bool
	ran      atomic.Uint64 // operations started here
	failed   atomic.Uint64 // of them, those that failed here, but for a mismatch
	// mismatched is 1 + the first collective that failed here for a
	// mismatch, 0 if none did.
	mismatched atomic.Uint64
	// polled holds the planes of the operation running, for Pollers,
	// which reads them from the waiting goroutine: the first maxPolled.
	polled  [maxPolled]atomic.Pointer[link.Plane]
	npolled atomic.Int32

	// The driver's.
	executor                      // of the operation running
	queued   fifo.Queue[queuedOp] // started after the one running, oldest first
	// broken fails every operation from the Break on: the communicator
	// broke, or the rank aborted, for good.
	broken *Fail
	// adoption is an operation that timed out, on its way to the rank
	// once Start has been given every operation numbered behind it.
	adoption  *Adoption
	planes    []*link.Plane // of the operation's peers, in Request.Peers order
	early     []transport.Frame
	timer     *actors.Timer
	sentFuncs []func() // by step: a lent send's Frame.Sent, made once
	done      func()   // gives the rank's turn back, before the Work completes
}

// Owner is the rank whose turn a Direct runs on: it hears what the
// Direct cannot settle alone. Its methods must not block.
type Owner interface {
	// TellFailure reports the failure of req to its peers, through the
	// rank's links, so that they fail rather than wait.
	TellFailure(req *Request, report []byte)
	// Withdraw takes the turn back from Direct, for an operation that
	// timed out: no other is numbered after the call. It returns the
	// operations that hold the turn, each of which Start has been, or is
	// about to be, given, and the number the next collective would have
	// had.
	Withdraw() (held int, next uint64)
	// HandOver gives an operation that timed out, and those queued behind
	// it, to the rank, which finds out whom it waits for (see Adoption).
	HandOver(*Adoption)
	// Settle hands the rank a peer's connection that ended (see Failed),
	// for Gone or Break.
	Settle(peer int, err error)
}

// queuedOp is an operation given to Start while another ran.
type queuedOp struct {
	req    *Request
	planes []*link.Plane
	done   func()
}

type directKind uint8

const (
	dStart directKind = iota
	dFrame
	dSent
	dPeerFailed
	dTimeout
	dFail // cancel, abort, the communicator broke, a peer's report
	dPark // the waiting caller parks
)

type directEvent struct {
	kind   directKind
	req    *Request
	planes []*link.Plane
	done   func()
	peer   int
	frame  transport.Frame
	step   int
	seq    uint64 // dFail, dPark: the operation's Seq, or anySeq
	fail   *Fail
	err    error // dPeerFailed: what ended the peer's connection
	// reported says a dFail is a peer's report about collective collSeq.
	reported bool
	collSeq  uint64
}

// anySeq fails whichever operation runs.
const anySeq = ^uint64(0)

// NewDirect returns a Direct that runs on owner's turn.
func NewDirect(rt *actors.Runtime, owner Owner) *Direct {
	d := &Direct{rt: rt, owner: owner}
	d.timer = rt.NewTimerFunc(func() { d.post(directEvent{kind: dTimeout}) })
	return d
}

// Ready reports whether an operation may start at once: none is running,
// and no transport still reads a failed one's memory.
func (d *Direct) Ready() bool { return d.running.Load() == 0 && !d.draining.Load() }

// Start runs req, numbered by the rank's lease (its CollSeq, or its
// messages' ordinals), over planes, the planes of req.Peers in order,
// each Direct, once the operations started before it have ended: first
// says none has not. done is called once it ends, before req's
// Completion is told; req may end before Start returns.
func (d *Direct) Start(req *Request, planes []*link.Plane, first bool, done func()) {
	if first {
		// Every operation before it has ended, here or on the actors.
		d.ended.Store(req.Seq)
		d.poll(req.Seq, planes)
	} else {
		// A blocking call's timeout starts when its wait parks, which
		// may come before it starts here: it starts when the operation
		// does.
		req.Parks = false
	}
	d.last.Store(req.Seq + 1)
	d.ran.Add(1)
	d.post(directEvent{kind: dStart, req: req, planes: planes, done: done})
}

// poll marks operation seq, over planes, as the one running, for
// Pollers.
func (d *Direct) poll(seq uint64, planes []*link.Plane) {
	n := min(len(planes), maxPolled)
	for i := range n {
		d.polled[i].Store(planes[i])
	}
	d.npolled.Store(int32(n))
	d.running.Store(seq + 1)
}

// Ran counts the operations started here.
func (d *Direct) Ran() uint64 { return d.ran.Load() }

// Failures counts the operations started here that failed here for
// another reason than a mismatch.
func (d *Direct) Failures() uint64 { return d.failed.Load() }

// FirstMismatch is 1 + the first collective that failed here for a
// mismatch, 0 if none did.
func (d *Direct) FirstMismatch() uint64 { return d.mismatched.Load() }

// maxPolled bounds the planes a waiting goroutine polls: an operation
// with more peers (a tree's, a large all-to-all's) takes the frames of
// the rest from their transports' goroutines.
const maxPolled = 8

// Pollers appends to dst the connections a goroutine waiting for
// operation seq may poll (link.Plane.Poller), if it is here: those of
// the operation running, which runs before it, or is it. It returns the
// Seq+1 of the one running, 0 if none is.
func (d *Direct) Pollers(seq uint64, dst []transport.Poller) ([]transport.Poller, uint64) {
	n := int(d.npolled.Load())
	running := d.running.Load()
	if running == 0 || !d.Holds(seq) {
		return dst, 0
	}
	for i := range n {
		if p := d.polled[i].Load(); p != nil {
			if po := p.Poller(); po != nil {
				dst = append(dst, po)
			}
		}
	}
	return dst, running
}

// Running returns the Seq+1 of the operation running here, 0 if none is.
func (d *Direct) Running() uint64 { return d.running.Load() }

// Holds reports whether the operation numbered seq is here and has not
// ended: it runs, or waits for those before it. (One canceled while it
// waited may read as held until they end.)
func (d *Direct) Holds(seq uint64) bool {
	return d.ended.Load() <= seq && seq < d.last.Load()
}

// Cancel fails the operation numbered seq with err, if it is here, and
// tells its peers.
func (d *Direct) Cancel(seq uint64, err error) {
	d.post(directEvent{kind: dFail, seq: seq, fail: &Fail{Err: err, Tell: true, Canceled: true}})
}

// Park says the caller that waits for the operation numbered seq parks:
// its timeout, which a wait that polls spares, starts now.
func (d *Direct) Park(seq uint64) {
	d.post(directEvent{kind: dPark, seq: seq})
}

// Break fails the operations here, and every one started after, with err
// naming ranks: the communicator broke, or the rank aborts.
func (d *Direct) Break(err error, ranks []int) {
	d.post(directEvent{kind: dFail, seq: anySeq, fail: &Fail{Err: err, Ranks: ranks}})
}

// Reported fails the operation here that is collective collSeq, if any,
// which a peer reported failed with err; report is passed on.
func (d *Direct) Reported(collSeq uint64, err error, ranks []int, report []byte) {
	d.post(directEvent{kind: dFail, seq: anySeq, collSeq: collSeq, reported: true, fail: &Fail{Err: err, Ranks: ranks, Forward: report}})
}

// Deliver and Failed make a Direct the link.Sink of its planes.
func (d *Direct) Deliver(peer int, f transport.Frame) {
	d.post(directEvent{kind: dFrame, peer: peer, frame: f})
}

// A connection that ends goes through the rank (Owner.Settle), after
// what the rank heard before it: a peer's report of a failure, which
// must win over the end of the connection it came on, or the failure of
// another rank, which may be why this peer went and is the one to name.
func (d *Direct) Failed(peer int, err error) { d.owner.Settle(peer, err) }

// Gone fails the operation running here if it still needs peer, whose
// connection err ended.
func (d *Direct) Gone(peer int, err error) {
	d.post(directEvent{kind: dPeerFailed, peer: peer, err: err})
}

// post queues e, and handles the queue unless another goroutine is.
func (d *Direct) post(e directEvent) {
	d.mu.Lock()
	d.events.Push(e)
	if d.driving {
		d.mu.Unlock()
		return
	}
	d.driving = true
	for {
		e, ok := d.events.Pop()
		if !ok {
			d.driving = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		d.handle(e)
		d.mu.Lock()
	}
}

// handle handles e, then starts the queued operations, one after
// another, while none runs and no transport reads a failed one's memory,
// unless they go to the rank with one that timed out.
func (d *Direct) handle(e directEvent) {
	d.step(e)
	if d.adoption != nil {
		d.handOver()
		return
	}
	for d.req == nil && !d.draining.Load() {
		op, ok := d.queued.Pop()
		if !ok {
			return
		}
		if d.broken != nil {
			d.drop(op, d.broken)
			continue
		}
		d.planes = op.planes
		d.start(op.req, op.done)
	}
}

func (d *Direct) step(e directEvent) {
	switch e.kind {
	case dStart:
		d.queued.Push(queuedOp{req: e.req, planes: e.planes, done: e.done})
		return
	case dSent:
		if d.req == nil {
			if d.drained() {
				d.draining.Store(false)
			}
			return
		}
		d.settle(d.sent(e.step))
		return
	case dFail:
		d.fail(e)
		return
	}
	if d.req == nil {
		transport.Release(e.frame)
		return
	}
	switch e.kind {
	case dFrame:
		d.settle(d.arrive(e.peer, e.frame))
	case dPeerFailed:
		if d.needs(e.peer) {
			d.end(d.lost(e.peer, e.err))
		}
	case dTimeout:
		if d.timer.Fired() {
			d.timedOut()
		}
	case dPark:
		// A Park may come after the operation ended.
		if e.seq == d.req.Seq && d.req.Parks && d.req.Timeout > 0 {
			d.timer.Arm(d.req.Timeout)
		}
	}
}

// fail ends what a dFail names: the operation e.seq, if here; every one,
// from now on (anySeq); or the one that is collective e.collSeq, which a
// peer reported.
func (d *Direct) fail(e directEvent) {
	if e.seq == anySeq && !e.reported {
		d.broken = e.fail
		if d.req != nil {
			d.end(e.fail)
		}
		for op, ok := d.queued.Pop(); ok; op, ok = d.queued.Pop() {
			d.drop(op, e.fail)
		}
		return
	}
	is := func(req *Request) bool {
		if e.reported {
			return req.P2P == nil && req.CollSeq == e.collSeq
		}
		return req.Seq == e.seq
	}
	if d.req != nil && is(d.req) {
		d.end(e.fail)
		return
	}
	for i := range d.queued.Len() {
		if op := d.queued.At(i); is(op.req) {
			d.queued.Remove(i)
			d.drop(op, e.fail)
			return
		}
	}
}

// drop ends a queued operation that never started, with f's failure,
// which its peers hear of if f says to tell them, as end does.
func (d *Direct) drop(op queuedOp, f *Fail) {
	req := op.req
	req.Planes, req.Strays = op.planes, straysOf(op.planes)
	report := d.failure(req, f)
	req.endedHere(false, report)
	if report != nil {
		d.owner.TellFailure(req, report)
	}
	if d.req == nil && d.queued.Len() == 0 {
		d.ended.Store(req.Seq + 1) // nothing before it is left here
	}
	op.done()
	req.End(f.errorOf(req))
	req.Release()
}

// failure counts f, a failure of req, unless it is a mismatch (the
// program's, not this rank's), which it notes if it is the first, and
// returns what req's peers are told.
func (d *Direct) failure(req *Request, f *Fail) []byte {
	switch {
	case !errors.Is(f.Err, commerr.ErrInvalidArgument):
		d.failed.Add(1)
	case req.P2P == nil:
		d.mismatched.CompareAndSwap(0, req.CollSeq+1)
	}
	return f.reportFor(req)
}

// straysOf returns where the rank of planes answers stray frames.
func straysOf(planes []*link.Plane) *link.Strays {
	if len(planes) == 0 {
		return nil
	}
	return planes[0].Strays()
}

func (d *Direct) start(req *Request, done func()) {
	if d.running.Load() != req.Seq+1 { // else Start marked it, as the first
		d.poll(req.Seq, d.planes)
	}
	req.Planes, req.Strays = d.planes, straysOf(d.planes) // as the rank's links give them on the actors
	d.begin(req, d)
	d.done = done
	for i, p := range d.planes {
		d.borrow[i], d.maps[i] = p.Borrows(), p.PeerMaps()
	}
	if req.Timeout > 0 && !req.Parks {
		d.timer.Arm(req.Timeout)
	}
	req.Begin()
	var keys [][]link.Key
	if req.P2P != nil {
		keys = d.inbound()
	}
	for i, p := range d.planes {
		var err error
		switch {
		case req.P2P == nil:
			d.early, err = p.Attach(req.CollSeq, d, d.early[:0])
		case len(keys[i]) > 0:
			d.early, err = p.AttachMessages(keys[i], d, d.early[:0])
		default:
			continue // it only sends to this peer
		}
		for j, f := range d.early {
			if fail := d.take(p.Peer(), f); fail != nil {
				for _, rest := range d.early[j+1:] {
					transport.Release(rest)
				}
				clear(d.early)
				d.end(fail)
				return
			}
		}
		clear(d.early)
		if err != nil {
			// After the frames the peer sent before it went, once the
			// operation has started: it fails if it still needs more.
			d.post(directEvent{kind: dPeerFailed, peer: p.Peer(), err: err})
		}
	}
	req.startedHere() // once attached to every plane
	d.settle(d.executor.start())
}

// settle ends the operation if the executor's event ended it.
func (d *Direct) settle(ended bool, f *Fail) {
	if ended {
		d.end(f)
	}
}

// send, sentFunc and offer make a Direct its executor's outbox: frames
// go to the peers' planes.
func (d *Direct) send(p int, f transport.Frame) error {
	err := d.planes[p].Send(f)
	if err != nil {
		d.Failed(d.planes[p].Peer(), err)
	}
	return err
}

func (d *Direct) offer(p int, h transport.Header, data []byte) {
	offer(d.rt, d.req, d.planes[p], h, data)
}

// sentFunc returns the Frame.Sent of a lent send of step i; one per step
// index, kept for later runs.
func (d *Direct) sentFunc(i int) func() {
	for len(d.sentFuncs) <= i {
		e := directEvent{kind: dSent, step: len(d.sentFuncs)}
		d.sentFuncs = append(d.sentFuncs, func() { d.post(e) })
	}
	return d.sentFuncs[i]
}

// timedOut hands the operation to the actors, which ask its peers how far
// they got and name the rank it is stuck on, with the operations queued
// behind it, which run there after it. One whose sends the transport
// still reads fails here instead, naming the ranks it waits for.
func (d *Direct) timedOut() {
	if !d.movable() {
		d.end(d.stuck())
		return
	}
	for _, p := range d.planes {
		p.Detach(d)
	}
	d.adoption = &Adoption{exec: d.executor}
	d.executor = executor{}
	d.planes, d.done = nil, nil
	d.running.Store(0)
}

// handOver gives the rank the operation that timed out and those queued
// behind it, once Start has been given every one numbered before the
// turn was withdrawn.
func (d *Direct) handOver() {
	held, next := d.owner.Withdraw()
	if held != 1+d.queued.Len() {
		return // the issuers of the rest are in Start: their dStart comes
	}
	a := d.adoption
	d.adoption = nil
	a.next = next
	for op, ok := d.queued.Pop(); ok; op, ok = d.queued.Pop() {
		a.queued = append(a.queued, op.req)
		if op.req.P2P == nil {
			a.next--
		}
	}
	d.ended.Store(d.last.Load())
	d.owner.HandOver(a)
}

// Adoption is an operation that ran off the actors and timed out, on its
// way to the collective actor, which carries on with it from where it
// stopped: it holds the operation's executor. The rank's turn comes back
// with it, and the operations queued behind it, which have not started.
type Adoption struct {
	exec   executor
	queued []*Request
	next   uint64 // the number of the first collective after it
}

// Request returns the operation's request.
func (a *Adoption) Request() *Request { return a.exec.req }

// Queued returns the operations queued behind it, in issue order.
func (a *Adoption) Queued() []*Request { return a.queued }

// Next returns the number the first collective after it has, queued or
// not.
func (a *Adoption) Next() uint64 { return a.next }

// end completes the operation, with nil or f's failure, which its peers
// hear of if f says to tell them. The rank gets its turn back first, so
// that the caller's next operation finds it free.
func (d *Direct) end(f *Fail) {
	req := d.req
	d.timer.Stop()
	var report []byte
	if f != nil {
		report = d.failure(req, f)
	}
	req.endedHere(f == nil, report) // before letting go of the planes
	for _, p := range d.planes {
		p.Detach(d)
	}
	var err error
	if f != nil {
		if report != nil {
			d.owner.TellFailure(req, report)
		}
		err = f.errorOf(req)
	}
	// A transport that still reads scratch memory holds the next one back.
	d.draining.Store(d.close())
	d.planes = nil
	done := d.done
	d.done = nil
	d.running.Store(0)
	d.ended.Store(req.Seq + 1)
	done()
	req.End(err)
	req.Release()
}
