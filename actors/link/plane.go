package link

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/resume"
)

// Plane is the data plane of a link: where the frames of its rank's
// collectives and point-to-point messages from the peer go, whichever
// runs the operation, the collective actor or a Direct run on the
// caller's goroutine. Frames of an operation that nothing takes yet wait
// in the plane, so that either finds the frames a peer sent ahead of it.
//
// A collective sends its frames through the plane straight to the link's
// connection, a resume.Conn, which loses none across reconnections, marked
// direct: the peer's transport hands them to its plane on its own
// goroutine, and neither link actor sees them. Every other frame goes
// through the link actor; the link hands the plane the collective and
// point-to-point frames among them.
//
// A link makes its Plane's connection known as it connects, tells it when
// the connection breaks or the link fails, and watches its peer while a
// collective waits on the plane.
type Plane struct {
	conn  atomic.Pointer[resume.Conn]
	heard atomic.Uint64 // direct frames that came, which the link's watch counts as word from the peer
	// attached counts the collectives that attached; the link reads it
	// before it hands on any frame (ordered), so that what an operation's
	// issuer did before the collective attached happens before what the
	// link hands on later: a window's frames that follow a barrier, say,
	// whose own frames the plane, not the link, handed over.
	attached atomic.Uint64

	mu sync.Mutex
	// peer (a rank: 31 bits are plenty), watched (the link watches the
	// peer, or has been asked to), held (the plane is in strays'
	// holding: written under both strays' lock and mu, read under either)
	// and queued (frames waiting in the link's mailbox) share a word
	// beside mu: a simulation holds millions of planes.
	peer          int32
	watched, held bool
	queued        uint16
	sink          Sink
	seq           uint64            // the collective sink takes
	early         []transport.Frame // collective frames no sink took yet, payloads their own
	msgs          *messages         // point-to-point frames, made on first use
	err           error             // the link failed for good
	watch         func()            // starts the link's watch of the peer; nil until the link starts
	offers        []offer           // large messages to the peer, waiting for it to clear them (rendezvous.go)

	strays *Strays // nil: early frames of ended collectives are dropped unanswered

	// left is 1 + the collectives the peer has a part in, as its goodbye
	// (ControlBye) said, 0 while it has not or could not count them: its
	// connection's end then wraps in a PeerLeft.
	left atomic.Uint64
}

// ControlBye is the tag of the control frame a rank sends each peer as it
// finalizes, its header's Seq 1 + the collectives it has a part in if
// its communicator is sound, 0 if it broke (some of its calls then never
// started, and are not counted). Those are the collectives it called, up
// to the first that failed there for a mismatch: a peer that still waits
// in that one waits for a part the rank will not play. The link notes it before the connection
// that follows ends, so that the failure the end causes says the peer
// finalized, not crashed.
const ControlBye = 4

// PeerLeft is the error a collective's Sink is told when the peer's
// connection ended after the peer finalized: a collective numbered
// Collectives or later has no partner there.
type PeerLeft struct {
	Collectives uint64
	Err         error
}

func (e *PeerLeft) Error() string { return e.Err.Error() }
func (e *PeerLeft) Unwrap() error { return e.Err }

// saidBye notes the peer finalized, as a ControlBye's Seq says.
func (p *Plane) saidBye(seq uint64) { p.left.Store(seq) }

// ended wraps err, if any, in a PeerLeft if the peer said goodbye.
func (p *Plane) ended(err error) error {
	if n := p.left.Load(); n > 0 && err != nil {
		return &PeerLeft{Collectives: n - 1, Err: err}
	}
	return err
}

// Sink is what runs a collective: the plane hands it the frames of its
// collective, and tells it when the peer is gone (Failed). Its methods
// are called from any goroutine, never under the plane's lock, and must
// not block.
type Sink interface {
	Deliver(peer int, f transport.Frame)
	Failed(peer int, err error)
}

// NewPlane returns the plane of a link to peer, for its Config.
func NewPlane(peer int) *Plane { return &Plane{peer: int32(peer)} }

// Peer returns the rank the plane's frames come from.
func (p *Plane) Peer() int { return int(p.peer) }

// direct marks, in a frame's Kind, a collective frame sent around the
// link actors: neither end counts it.
const direct transport.Kind = 0x40

// ErrNotDirect reports a direct send over a plane whose connection cannot
// carry one.
var ErrNotDirect = errors.New("link: no lossless connection to send on directly")

// Direct reports whether the plane's connection carries direct frames
// now: it is made and transport.Lossless.
func (p *Plane) Direct() bool {
	pc := p.conn.Load()
	return pc != nil && pc.Lossless()
}

// Borrows reports whether the connection borrows lent payloads
// (transport.Borrower).
func (p *Plane) Borrows() bool {
	pc := p.conn.Load()
	return pc != nil && pc.Borrows()
}

// Poller returns the plane's connection if it is a transport.Poller,
// which a goroutine waiting for the plane's frames may poll: what it
// takes the transport delivers on that goroutine, to whichever plane and
// actor it is for. Nil otherwise.
func (p *Plane) Poller() transport.Poller {
	if pc := p.conn.Load(); pc != nil && pc.Pollable() {
		return pc
	}
	return nil
}

// PeerMaps reports whether the peer may map this process's shared
// memory (transport.Mapping).
func (p *Plane) PeerMaps() bool {
	pc := p.conn.Load()
	return pc != nil && pc.PeerMaps()
}

// TrySend sends f to the peer directly if the plane's connection carries
// direct frames now (Direct), and reports whether it did; f is left to
// the caller otherwise. A send that fails is the link's to report, as
// Failed.
func (p *Plane) TrySend(f transport.Frame) bool {
	if !p.Direct() {
		return false
	}
	p.Send(f)
	return true
}

// SendControl sends f, a control frame, to the peer of the link at pid:
// around both link actors, on the plane's connection, if that carries
// direct frames, nothing waits in the link's mailbox to be sent and the
// link has not been asked to stop (Stopping), and through the link actor
// otherwise (Post), so that it overtakes nothing sent before it. The
// peer's link hands it to its parent, the rank actor, as a *Delivered.
func SendControl(ctx actor.SenderContext, pid *actor.PID, p *Plane, f transport.Frame) {
	if !p.trySendControl(f) {
		p.Post(ctx, pid, &Send{Frame: f})
	}
}

// Post asks the link at pid, whose plane p is, to send m's frame, and
// counts it as waiting there until the link has sent it: a control
// frame sent around the link must not overtake it (SendControl). Every
// Send a link gets comes through here.
func (p *Plane) Post(ctx actor.SenderContext, pid *actor.PID, m *Send) {
	p.mu.Lock()
	if p.queued < maxQueued {
		p.queued++
	}
	p.mu.Unlock()
	ctx.Send(pid, m)
}

// maxQueued is where the count of frames waiting in the link's mailbox
// stops: a count that reaches it stays, and the link's control frames go
// through its mailbox from then on.
const maxQueued = math.MaxUint16

// Stopping says the link's parent is about to ask it to stop or to
// close: from then on its control frames go through its mailbox, behind
// that request. A rank that aborted says nothing after its links stop:
// a goodbye sent around them would tell its peers it left on purpose.
func (p *Plane) Stopping() {
	p.mu.Lock()
	p.queued = maxQueued
	p.mu.Unlock()
}

// trySendControl sends f on the plane's connection, as SendControl says,
// and reports whether it did.
func (p *Plane) trySendControl(f transport.Frame) bool {
	pc := p.conn.Load()
	if pc == nil || !pc.Lossless() {
		return false
	}
	p.mu.Lock()
	idle := p.queued == 0
	p.mu.Unlock()
	if idle {
		pc.Send(f) // a refusal says the conn ended, which its handler reports
	}
	return idle
}

// sent says the link has handed on a frame Post counted.
func (p *Plane) sent() {
	p.mu.Lock()
	if p.queued > 0 && p.queued < maxQueued {
		p.queued--
	}
	p.mu.Unlock()
}

// stale reports whether the control frame f brings the rank nothing new
// (Strays.Stale).
func (p *Plane) stale(f transport.Frame) bool {
	return p.strays != nil && p.strays.Stale != nil && p.strays.Stale(f.Header, f.Payload)
}

// handOn posts d, a control frame the peer sent, to the link's parent,
// unless the link has failed: under the plane's lock, which the link
// fails the plane under before it tells the parent (Failed), so that the
// parent hears of no frame after the failure.
func (p *Plane) handOn(rt *actors.Runtime, parent *actor.PID, d *Delivered) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return false
	}
	p.ordered()
	rt.System().Root.Send(parent, d)
	return true
}

// Send sends f to the peer directly, on the caller's goroutine: the
// connection takes the payload as Conn.Send says. Once the link failed,
// it fails with the link's error, which says whether the peer finalized
// (PeerLeft): a send to a peer that left after its last collective is
// the program's mismatch, not a failure.
func (p *Plane) Send(f transport.Frame) error {
	pc := p.conn.Load()
	if pc == nil {
		transport.Release(f)
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		if err == nil {
			err = ErrNotDirect
		}
		return err
	}
	f.Header.Kind |= direct
	return p.ended(pc.Send(f))
}

// Attach makes s the sink of collective seq's frames, and appends to dst
// those that came already, for s to take as delivered; it discards the
// frames of earlier collectives, which ended here. Once the link has
// failed it returns the error too, after the frames the peer sent before
// it said goodbye, if it did: s takes them first.
func (p *Plane) Attach(seq uint64, s Sink, dst []transport.Frame) ([]transport.Frame, error) {
	p.mu.Lock()
	p.early = slices.DeleteFunc(p.early, func(f transport.Frame) bool {
		switch {
		case f.Header.Seq == seq:
			dst = append(dst, f)
		case f.Header.Seq < seq:
			transport.Release(f)
		default:
			return false
		}
		return true
	})
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return dst, err
	}
	ask := p.hold(s, seq)
	release := p.held && len(p.early) == 0
	p.mu.Unlock()
	if ask {
		p.watch()
	}
	if release {
		p.strays.release(p)
	}
	return dst, nil
}

// messages is where a plane's point-to-point frames go: the keys of the
// frames its sink takes, those of a point-to-point operation that
// receives from the peer, and the frames that came before the operation
// that takes them. Their sequence numbers are the pair's message
// ordinals, not collectives', so they wait apart.
type messages struct {
	keys  []Key
	early []transport.Frame
}

// AttachMessages makes s the sink of the point-to-point frames of keys,
// those of the messages a point-to-point operation receives from the
// peer, and appends to dst those that came already, for s to take as
// delivered. keys must not change until s detaches. Once the link has
// failed it returns the error too, after the messages as Attach does.
func (p *Plane) AttachMessages(keys []Key, s Sink, dst []transport.Frame) ([]transport.Frame, error) {
	p.mu.Lock()
	if p.msgs == nil {
		p.msgs = &messages{}
	}
	m := p.msgs
	m.early = slices.DeleteFunc(m.early, func(f transport.Frame) bool {
		if !slices.Contains(keys, KeyOf(f.Header)) {
			return false
		}
		dst = append(dst, f)
		return true
	})
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return dst, err
	}
	m.keys = keys
	ask := p.hold(s, noCollective)
	p.mu.Unlock()
	if ask {
		p.watch()
	}
	return dst, nil
}

// noCollective is the seq of a sink that takes no collective's frames.
const noCollective = ^uint64(0)

// hold makes s the sink, of collective seq's frames (noCollective: of
// none), and reports whether the link is to be asked to watch the peer,
// once p.mu is let go. Called with p.mu held.
func (p *Plane) hold(s Sink, seq uint64) (ask bool) {
	p.sink, p.seq = s, seq
	p.attached.Add(1)
	return p.askWatch()
}

// askWatch reports whether the link is to be asked to watch the peer:
// a sink waits on the plane, the link has started (watch), and no watch
// was asked for yet; it notes that one is. Called with p.mu held.
func (p *Plane) askWatch() bool {
	if p.watched || p.watch == nil || p.sink == nil {
		return false
	}
	p.watched = true
	return true
}

// Detach ends s's hold on the plane: frames that come later wait for the
// next operation.
func (p *Plane) Detach(s Sink) {
	p.mu.Lock()
	if p.sink == s {
		p.sink = nil
		if p.msgs != nil {
			p.msgs.keys = nil
		}
	}
	p.mu.Unlock()
}

// ordered joins the link's turn to the collectives that attached before
// it (attached).
func (p *Plane) ordered() { p.attached.Load() }

// arrive hands f to the sink of its operation, or keeps it until one
// attaches.
func (p *Plane) arrive(f transport.Frame) {
	message := f.Header.Kind == transport.PointToPoint
	if message && f.Header.Tag&TagClear != 0 {
		transport.Release(f)
		p.cleared(f.Header)
		return
	}
	p.mu.Lock()
	if s := p.sink; s != nil && p.takes(f.Header, message) {
		p.mu.Unlock()
		s.Deliver(p.Peer(), f)
		return
	}
	if p.err != nil {
		p.mu.Unlock()
		transport.Release(f)
		return
	}
	if message {
		if p.msgs == nil {
			p.msgs = &messages{}
		}
		p.msgs.early = append(p.msgs.early, transport.Detach(f))
		p.mu.Unlock()
		return
	}
	seq := f.Header.Seq
	p.early = append(p.early, transport.Detach(f))
	p.mu.Unlock()
	if p.strays != nil {
		if o, ok := p.strays.kept(p, seq); ok {
			p.answerStrays(o)
		}
	}
}

// takes reports whether the sink takes the frame of h, a point-to-point
// message's or a collective's. Called with p.mu held.
func (p *Plane) takes(h transport.Header, message bool) bool {
	if message {
		return p.msgs != nil && slices.Contains(p.msgs.keys, KeyOf(h))
	}
	return h.Seq == p.seq
}

// Strays returns where the plane answers stray frames: its rank's, or
// nil.
func (p *Plane) Strays() *Strays { return p.strays }

// setWatch sets how the plane starts its link's watch of the peer, and
// reports whether to start it now: a collective attached before the link
// started, when the plane had no watch to ask for.
func (p *Plane) setWatch(f func()) (ask bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch = f
	return p.askWatch()
}

// connected makes c the connection direct frames go on.
func (p *Plane) connected(c *resume.Conn) { p.conn.Store(c) }

// fail says the link failed for good. The frames a peer that said
// goodbye sent before it stay for the operations that take them, which
// it finished on its side: a message sent just before the sender
// finalized is still received. A peer that failed sent nothing to wait
// for.
func (p *Plane) fail(err error) {
	p.conn.Store(nil)
	err = p.ended(err)
	p.mu.Lock()
	p.err = err
	s := p.sink
	offers := p.offers // the link's failure ends them, once p.mu is let go
	p.offers = nil
	if p.left.Load() == 0 {
		for _, f := range p.early {
			transport.Release(f)
		}
		clear(p.early)
		p.early = p.early[:0]
		if m := p.msgs; m != nil {
			for _, f := range m.early {
				transport.Release(f)
			}
			m.early = nil
		}
	}
	p.mu.Unlock()
	for _, o := range offers {
		o.done(err)
	}
	if s != nil {
		s.Failed(p.Peer(), err)
	}
}

// Idle reports whether no message waits on the plane: none offered,
// kept, or waited for. The collective frames it keeps go on to the
// plane of the link that follows (Released.Early, Keep).
func (p *Plane) Idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.offers) == 0 && (p.msgs == nil || len(p.msgs.early) == 0 && len(p.msgs.keys) == 0)
}

// released ends the plane of a link both ends released, and returns the
// collective frames it kept for operations that had not attached, in
// the order they came, for the next link to the peer (Keep). A sink
// still attached hears nothing: the rank took the link from it
// (collective.Unlinked), and its frames come on the next.
func (p *Plane) released() []transport.Frame {
	p.conn.Store(nil)
	p.mu.Lock()
	early := p.early
	p.early, p.sink, p.err = nil, nil, errReleased
	held := p.held
	p.mu.Unlock()
	if held {
		p.strays.release(p)
	}
	return early
}

// Keep keeps frames of the peer's last link's plane (Released.Early)
// for the operations that attach later, ahead of any that came since.
func (p *Plane) Keep(early []transport.Frame) {
	if len(early) == 0 {
		return
	}
	p.mu.Lock()
	p.early = append(early, p.early...)
	p.mu.Unlock()
}

func (p *Plane) current() Sink {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sink
}

// waiting reports whether a collective waits on the plane.
func (p *Plane) waiting() bool { return p.current() != nil }

// unwatch records that the link stops watching, unless a collective
// waits on the plane: it reports whether the watch ends.
func (p *Plane) unwatch() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sink != nil {
		return false
	}
	p.watched = false
	return true
}

// Forwarder is the Sink of an actor: it posts each frame as a
// *Delivered and a failure as a *Failed to the actor's mailbox.
type Forwarder struct {
	rt *actors.Runtime
	to *actor.PID
}

// NewForwarder returns the Sink that posts to the actor at to.
func NewForwarder(rt *actors.Runtime, to *actor.PID) *Forwarder {
	return &Forwarder{rt: rt, to: to}
}

// To returns the actor s posts to.
func (s *Forwarder) To() *actor.PID { return s.to }

func (s *Forwarder) Deliver(peer int, f transport.Frame) {
	s.rt.System().Root.Send(s.to, delivered(peer, f))
}

func (s *Forwarder) Failed(peer int, err error) {
	s.rt.System().Root.Send(s.to, &Failed{Peer: peer, Err: err})
}
