package link

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/resume"
)

// Key names the frames of one operation on one link. Collective frames are
// keyed by the operation's sequence number alone (Tag 0): every message of
// the operation goes to the same collective actor. Point-to-point frames are
// keyed by the pair's ordinal and the user tag.
type Key struct {
	Kind transport.Kind
	Seq  uint64
	Tag  uint32
}

// KeyOf returns the routing key of an inbound frame. A message's marks
// (TagMarks) are no part of it: a rendezvous's frames go where the
// message goes.
func KeyOf(h transport.Header) Key {
	if h.Kind == transport.Collective || h.Kind == transport.Window {
		return Key{Kind: h.Kind, Seq: h.Seq}
	}
	return Key{Kind: h.Kind, Seq: h.Seq, Tag: h.Tag &^ TagMarks}
}

// Send asks the link to send a frame (Plane.Post); the payload's
// ownership moves with it, or, if the frame's Sent is set, the payload is
// lent (see transport.Frame). One taken from a SendPool goes back there
// once the link has handed its frame on.
type Send struct {
	Frame transport.Frame
	pool  *SendPool
}

// SendPool keeps Send messages for reuse, so that sending a frame
// allocates nothing: an actor takes them from its own pool, and links give
// them back. The zero value is ready.
type SendPool struct{ free freeList[Send] }

// Get returns a message that sends f.
func (p *SendPool) Get(f transport.Frame) *Send {
	m := p.free.get()
	if m == nil {
		m = &Send{pool: p}
	}
	m.Frame = f
	return m
}

// recycle gives m back to its pool, if it came from one.
func (m *Send) recycle() {
	if p := m.pool; p != nil {
		m.Frame = transport.Frame{}
		p.free.put(m)
	}
}

// freeList keeps up to poolKept values for reuse; any goroutine may take
// or give back.
type freeList[T any] struct {
	mu   sync.Mutex
	free []*T
}

// poolKept bounds the values a free list keeps.
const poolKept = 1024

// get takes a kept value, or returns nil.
func (l *freeList[T]) get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.free)
	if n == 0 {
		return nil
	}
	v := l.free[n-1]
	l.free[n-1] = nil
	l.free = l.free[:n-1]
	return v
}

func (l *freeList[T]) put(v *T) {
	l.mu.Lock()
	if len(l.free) < poolKept {
		l.free = append(l.free, v)
	}
	l.mu.Unlock()
}

// Route asks the link to deliver the next Frames (at least one) frames of
// Key to To, stashed ones first, and then to forget the key: an operation that gets
// every frame it expects needs no Unroute, which saves a message per link
// and operation. Frames Unbounded routes every frame of Key until an
// Unroute: a window's. Routing a collective sequence number also discards
// stashed collective frames of earlier sequence numbers: ops on a
// communicator run one at a time, so those belong to operations that
// already failed here.
type Route struct {
	Key    Key
	To     *actor.PID
	Frames int
}

// Unbounded is the Frames of a Route that does not run out.
const Unbounded = -1

// Expect says whether the actor Key is routed to waits for frames of the
// peer (On), as a window does while replies are due: the link then
// watches the peer, as it does for an operation's bounded route, and finds
// it failed once it has been silent too long.
type Expect struct {
	Key Key
	On  bool
}

// Unroute ends a Route before its frames have all come: the operation
// ended without them.
type Unroute struct{ Key Key }

// Watch asks the link to watch its peer (On) or to stop: the rank waits
// on it outside any operation, in an agreement. A watched peer's silence
// counts from the watch's start even before it has answered anything, and
// the first ping makes the connection if the link has none yet.
type Watch struct{ On bool }

// Close closes the link on purpose, once what it sent has arrived: it
// sends tagFin after its frames, reconnecting if it must, and stops when
// the peer answers, or when the peer turns out gone. Stopping the link
// instead closes it at once.
type Close struct{}

// Release says the link's parent no longer uses it: the link sends
// tagRelease after what it was given before, and from then on sends
// nothing, keeping what it is given for Released. It ends once the peer
// released its end too; until then frames still arrive. A link that
// failed or closes ignores it.
type Release struct{}

// ReleaseAsked tells the link's parent that the peer released its end
// (Release) while this one has not: the peer sends nothing more on this
// link, which ends once the parent releases it too, or goes on if the
// parent declines (Decline).
type ReleaseAsked struct{ Peer int }

// Decline answers a ReleaseAsked the parent will not match: an operation
// here holds the link to its end. The link sends tagDecline, and the
// peer's end, which released, takes the link back (Declined). A link
// that released too, or was not asked, ignores it.
type Decline struct{}

// Declined tells the link's parent that the peer declined its release:
// the link carries frames again, those given since the release first.
type Declined struct{ Peer int }

// Released tells the link's parent that both ends released the link,
// which the parent is to stop: the pair shares no connection any more.
// Unsent are the frames the link was given after its release went, in
// order, for the parent to send on a new link; a link given more before
// it stops hands them on in further Released.
type Released struct {
	Peer   int
	Unsent []transport.Frame
	// Early are the collective frames the link's plane kept for
	// operations that had not attached, for the next link's (Keep).
	Early []transport.Frame
}

// Delivered carries an inbound frame from a link to the actor its key is
// routed to, or to the link's parent for control frames. The receiver owns
// the payload, and may give the message back with Recycle.
type Delivered struct {
	Peer  int
	Frame transport.Frame
}

// Recycle gives the message back for reuse, once its receiver has read it
// (the payload is the receiver's, and stays so): the receiver must not
// touch the message afterwards. A message not given back is the
// collector's.
func (d *Delivered) Recycle() {
	*d = Delivered{}
	deliveries.Put(d)
}

// deliveries keeps Delivered messages for reuse: the links' handlers and
// the Forwarders take them, on the transports' goroutines, and receivers
// give them back on theirs. One pool serves every link: a pool of each
// link's own would keep a message or two for each of a simulation's
// millions of links, used once.
var deliveries = sync.Pool{New: func() any { return new(Delivered) }}

// delivered returns a message that carries f from peer.
func delivered(peer int, f transport.Frame) *Delivered {
	d := deliveries.Get().(*Delivered)
	d.Peer, d.Frame = peer, f
	return d
}

// Failed tells the link's parent, and every actor a key is routed to, that
// the connection to Peer failed. It follows every frame that arrived before
// the failure, so a receiver that still waits for Peer knows nothing more
// will come.
type Failed struct {
	Peer int
	Err  error
}

// Lost tells the link's parent that the connection to Peer broke and the
// link is reconnecting (its supervisor restarts it), losing nothing: its
// resume.Conn sends again what the peer did not get. Err is why: if the
// supervisor gives up, the peer failed, and Err says how.
type Lost struct {
	Peer int
	Err  error
}

// Config describes a link.
type Config struct {
	Comm uint64 // the communicator id that every frame of the link carries
	Peer int
	Conn transport.Conn // the first connection
	// Dial returns a new connection to a peer, for Peer once the last one
	// broke: a rank's one function serves all its links.
	Dial func(peer int) (transport.Conn, error)
	// Heartbeat and Silence watch the peer while the link waits on it (an
	// operation expects its frames, or its acknowledgement of a lent
	// payload): after Heartbeat without a frame from it the link asks it
	// for one, and after Silence the peer has failed. Zero Silence
	// watches nothing.
	Heartbeat, Silence time.Duration
	// Plane is where the link hands the collective frames that arrive;
	// nil makes one.
	Plane *Plane
}

// The watch's defaults: a peer silent for five seconds while its link
// waits on it has failed (torchft's detector waits as long; ULFM's ten
// seconds), and is asked for a frame every second before that.
const (
	DefaultHeartbeat = time.Second
	DefaultSilence   = 5 * time.Second
)

// tick is the watch's timer.
type tick struct{}

// connFailed reports that the connection broke, or the link's
// resume.Conn ended.
type connFailed struct{ err error }

// reconnect is the panic a link fails with when its connection breaks,
// so that its supervisor restarts it, after a backoff, on a new one.
type reconnect struct{ err error }

func (r reconnect) String() string { return "connection lost: " + r.err.Error() }

// state is what survives a restart of the link actor. Its cfg.Conn is
// the first connection, and cfg.Plane the link's plane.
type state struct {
	rt  *actors.Runtime
	cfg Config
	// conn carries the link's frames over its connections, the first and
	// those it redials after one breaks, and loses none: nil until the
	// link starts.
	conn   *resume.Conn
	failed error // for good: later sends are dropped
	// heard is when a frame of the current connection last came, or the
	// watch began.
	heard time.Time
	// planeHeard is the count of the plane's direct frames at the last
	// tick: more since then are word from the peer.
	planeHeard uint64
	ticker     *actors.Timer
	// routing is made on first use: a link whose collectives' frames go
	// around it (Plane.TrySend) routes nothing, and a simulation holds
	// millions of links.
	routing *routing

	// The flags, side by side: a simulation holds millions of links.
	finished bool // the peer sent tagFin: its connection ends on purpose
	// peerUp says a frame of the peer's link came since the link last
	// connected: silence counts from then on, since a peer still
	// joining, or whose connection is still being made, is no silent one.
	peerUp bool
	// closing says Close came; finSent that tagFin went.
	closing, finSent bool
	watched          bool // Watch asked
	watching         bool // a tick is armed
	// releaseSent says the link sent tagRelease (Release), releaseGot
	// that the peer's came: with both, the link has ended (released).
	releaseSent, releaseGot bool
	unsent                  []transport.Frame // given after tagRelease went
}

// released reports whether both ends released the link, which the
// parent stops.
func (st *state) released() bool { return st.releaseSent && st.releaseGot }

// routes returns the link's routing, made on first use.
func (st *state) routes() *routing {
	if st.routing == nil {
		st.routing = &routing{}
	}
	return st.routing
}

// Producer returns the producer of the link actor described by cfg.
func Producer(rt *actors.Runtime, cfg Config) actor.Producer {
	if cfg.Plane == nil {
		cfg.Plane = NewPlane(cfg.Peer)
	}
	st := &state{rt: rt, cfg: cfg}
	return func() actor.Actor { return &linkActor{state: st} }
}

type linkActor struct{ *state }

func (l *linkActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Delivered: // from the handler
		l.arrive(ctx, m)
	case *Expect:
		l.routing.expect(m.Key, m.On)
		l.watch(ctx)
	case *Send:
		switch {
		case l.failed != nil:
			transport.Release(m.Frame)
		case l.released(): // the parent hands it to the next link
			ctx.Send(ctx.Parent(), &Released{Peer: l.cfg.Peer, Unsent: []transport.Frame{m.Frame}})
		case l.releaseSent:
			l.unsent = append(l.unsent, m.Frame)
		default:
			l.conn.Send(m.Frame) // a refusal says the conn ended, which its handler reports
		}
		l.cfg.Plane.sent()
		m.recycle()
		l.watch(ctx)
	case *Route:
		l.route(ctx, m)
		l.watch(ctx)
	case *Unroute:
		l.routing.unroute(m.Key)
		l.watch(ctx)
	case tick:
		if l.ticker.Fired() {
			l.tick(ctx)
		}
	case *Watch:
		l.watched = m.On
		l.watch(ctx)
	case *Release:
		l.release(ctx)
	case *Decline:
		if l.failed == nil && l.releaseGot && !l.releaseSent {
			l.releaseGot = false
			l.sendLink(tagDecline)
		}
	case *Close:
		l.closing = true
		if l.failed != nil || l.finished {
			// Nothing can go out any more, or the peer closed first: it
			// had what came before its tagFin was answered, and reads no
			// more.
			ctx.Stop(ctx.Self())
			return
		}
		l.fin()
	case *connFailed:
		l.lost(ctx, m.err)
	case *actor.Started:
		l.watchPlane(ctx)
		l.connect(ctx)
	case *actor.Stopping:
		l.stop()
	}
}

// waiting reports whether the link waits on its peer: for the frames of
// a routed operation or of a collective on the plane, for the
// acknowledgement of a lent payload, or for an agreement (Watch).
func (l *linkActor) waiting() bool {
	return l.failed == nil && (l.routing.expecting() || l.conn.Lending() || l.watched || l.cfg.Plane.waiting())
}

// watch starts watching the peer when the link comes to wait on it, and
// stops when it no longer does. An idle link arms no timer, so that an
// idle job, or a simulation, has nothing pending, and an operation over
// in less than a heartbeat costs no tick.
func (l *linkActor) watch(ctx actor.Context) {
	waiting := l.cfg.Silence > 0 && l.waiting()
	if !waiting && l.cfg.Silence > 0 && !l.cfg.Plane.unwatch() {
		waiting = l.failed == nil // a collective attached meanwhile
	}
	switch {
	case waiting && !l.watching:
		l.watching, l.heard = true, l.rt.Clock.Now()
		l.armTick(ctx)
	case !waiting && l.watching:
		l.ticker.Stop()
		l.watching = false
	}
}

// watchPlane lets the plane start the watch as a collective attaches to
// it: the plane arms the link's timer itself, on whatever goroutine
// attaches, rather than telling the link, which would cost a message for
// each link and collective of a simulation. The tick it arms finds the
// link not watching, and so knows the watch began a heartbeat before.
func (l *linkActor) watchPlane(ctx actor.Context) {
	if l.cfg.Silence <= 0 {
		return
	}
	if l.ticker == nil {
		l.ticker = l.rt.NewTimer(ctx.Self(), tick{})
	}
	ticker, every := l.ticker, l.cfg.Heartbeat
	if l.cfg.Plane.setWatch(func() { ticker.Arm(every) }) {
		ticker.Arm(every) // a collective attached before the link started
	}
}

// armTick arms the watch's next tick, on a timer that stays with the link
// across operations and restarts.
func (l *linkActor) armTick(ctx actor.Context) {
	if l.ticker == nil {
		l.ticker = l.rt.NewTimer(ctx.Self(), tick{})
	}
	l.ticker.Arm(l.cfg.Heartbeat)
}

// tick checks on the peer: it has failed once silent for Silence, and is
// asked for a frame once silent for Heartbeat, counting from when its
// link opened the connection. The watch ends when the link no longer
// waits.
func (l *linkActor) tick(ctx actor.Context) {
	if !l.watching {
		l.heard = l.rt.Clock.Now().Add(-l.cfg.Heartbeat) // the plane armed it (watchPlane)
	}
	l.watching = false
	if !l.waiting() && l.cfg.Plane.unwatch() {
		return
	}
	if n := l.cfg.Plane.heard.Load(); n != l.planeHeard {
		l.planeHeard, l.heard, l.peerUp = n, l.rt.Clock.Now(), true
	}
	// A peer counts as joined once its link sent a frame, or once the
	// connection to its process is made (a process that hangs before its
	// first frame reaches this one is found so); until then, its silence
	// means nothing.
	if !l.peerUp && !l.watched && !l.conn.Established() {
		l.heard = l.rt.Clock.Now()
	}
	silent := l.rt.Clock.Now().Sub(l.heard)
	if silent >= l.cfg.Silence {
		l.fail(ctx, fmt.Errorf("%w: rank %d sent nothing for %v: it hung, or the network lost it", errSilent, l.cfg.Peer, silent.Round(time.Millisecond)))
		return
	}
	if silent >= l.cfg.Heartbeat {
		l.sendLink(tagPing)
	}
	l.watching = true
	l.armTick(ctx)
}

// connect starts a connection: the first, or a new one after the last
// broke, which the link's resume.Conn carries on over from where the
// last one stopped.
func (l *linkActor) connect(ctx actor.Context) {
	if l.failed != nil {
		return
	}
	l.peerUp = false
	if l.conn != nil {
		conn, err := l.cfg.Dial(l.cfg.Peer)
		if err != nil {
			l.lost(ctx, err)
			return
		}
		l.conn.Resume(conn)
		return
	}
	l.conn = resume.New(l.cfg.Comm, l.cfg.Conn)
	l.conn.Start(handler{rt: l.rt, self: ctx.Self(), parent: ctx.Parent(), peer: l.cfg.Peer, plane: l.cfg.Plane})
	l.cfg.Plane.connected(l.conn)
	l.fin()
}

// fin sends tagFin once the link is closing, after every frame sent
// before.
func (l *linkActor) fin() {
	if l.closing && !l.finSent && l.failed == nil {
		l.finSent = true
		l.sendLink(tagFin)
	}
}

// sendLink sends a frame of the link layer.
func (l *linkActor) sendLink(tag uint32) {
	l.conn.Send(transport.Frame{Header: transport.Header{Comm: l.cfg.Comm, Kind: transport.Link, Tag: tag}})
}

func (l *linkActor) arrive(ctx actor.Context, m *Delivered) {
	if l.failed != nil {
		transport.Release(m.Frame)
		m.Recycle()
		return
	}
	l.peerUp = true
	if l.watching {
		l.heard = l.rt.Clock.Now()
	}
	h := m.Frame.Header
	if h.Kind == transport.Link {
		m.Recycle()
		l.linkFrame(ctx, h)
		return
	}
	l.deliver(ctx, m)
}

func (l *linkActor) linkFrame(ctx actor.Context, h transport.Header) {
	switch h.Tag {
	case tagFin:
		l.finished = true
		l.sendLink(tagFinAck)
	case tagFinAck:
		if l.finSent {
			ctx.Stop(ctx.Self())
		}
	case tagPing:
		l.sendLink(tagPong)
	case tagPong: // word from the peer, which arrive noted
	case tagRelease:
		l.releaseGot = true
		if l.releaseSent {
			l.end(ctx)
		} else {
			ctx.Send(ctx.Parent(), &ReleaseAsked{Peer: l.cfg.Peer})
		}
	case tagDecline:
		if l.releaseSent && !l.releaseGot {
			l.takeBack(ctx)
		}
	default:
		l.rt.Logger.Warn("unknown link frame", "peer", l.cfg.Peer, "tag", h.Tag)
	}
}

// release sends tagRelease, after every frame handed to the connection
// before, and ends the link if the peer's came already. The plane sends
// around the link no more: what is sent from now on waits here.
func (l *linkActor) release(ctx actor.Context) {
	if l.failed != nil || l.closing || l.releaseSent {
		return
	}
	l.releaseSent = true
	l.cfg.Plane.conn.Store(nil)
	l.sendLink(tagRelease)
	if l.releaseGot {
		l.end(ctx)
	}
}

// takeBack undoes the release the peer declined: the plane sends around
// the link again, and what the link was given since goes first.
func (l *linkActor) takeBack(ctx actor.Context) {
	l.releaseSent = false
	l.cfg.Plane.connected(l.conn)
	for _, f := range l.unsent {
		l.conn.Send(f)
	}
	l.unsent = nil
	ctx.Send(ctx.Parent(), &Declined{Peer: l.cfg.Peer})
}

// end closes the connection of a link both ends released, so that the
// next one to the peer is a new one, and hands the parent what the link
// kept, for the parent to stop it: a stop of its own could overtake the
// Released in the parent's mailbox.
func (l *linkActor) end(ctx actor.Context) {
	l.conn.Close()
	early := l.cfg.Plane.released()
	ctx.Send(ctx.Parent(), &Released{Peer: l.cfg.Peer, Unsent: l.unsent, Early: early})
	l.unsent = nil
}

// lost handles the current connection breaking, or a redial failing: the
// link fails for good if its resume.Conn ended (a lossless connection
// that ends may have lost what it carried), if the peer closed the
// connection on purpose or refuses it (nothing listens where it was: its
// process is gone), and otherwise fails as an actor, for its supervisor
// to restart it on a new connection after a backoff, or to stop it once
// restarts exceed its budget.
func (l *linkActor) lost(ctx actor.Context, err error) {
	if l.failed != nil || l.released() {
		return
	}
	if l.finished || errors.Is(err, transport.ErrRefused) || !l.conn.Lossless() {
		l.fail(ctx, err)
		return
	}
	ctx.Send(ctx.Parent(), &Lost{Peer: l.cfg.Peer, Err: err})
	panic(reconnect{err: err})
}

func (l *linkActor) deliver(ctx actor.Context, m *Delivered) {
	l.cfg.Plane.ordered()
	switch m.Frame.Header.Kind {
	case transport.Collective, transport.PointToPoint:
		l.cfg.Plane.arrive(m.Frame)
		m.Recycle()
		return
	}
	key := KeyOf(m.Frame.Header)
	if to, ok, ended := l.routing.take(key); ok {
		ctx.Send(to, m)
		if ended {
			l.watch(ctx) // the operation may have been all the link waited for
		}
		return
	}
	l.routes().keep(key, m.Frame)
	m.Recycle()
}

func (l *linkActor) route(ctx actor.Context, m *Route) {
	// Frames beyond the count stay stashed, for the next collective's
	// Route to discard: a peer sent more than this rank's schedule
	// expects, so their arguments differ, which the signature of the
	// frames handed over reports.
	for _, f := range l.routes().add(m.Key, m.To, m.Frames) {
		ctx.Send(m.To, delivered(l.cfg.Peer, f))
	}
	if l.failed != nil {
		ctx.Send(m.To, &Failed{Peer: l.cfg.Peer, Err: l.failed})
	}
}

// fail ends the link for good, telling the parent and every routed actor.
func (l *linkActor) fail(ctx actor.Context, err error) {
	if l.failed != nil {
		return
	}
	l.failed = err
	l.cfg.Plane.fail(err)
	// Nothing more can arrive; closing lets a peer that is finalizing see
	// its connection drained now rather than after its close timeout.
	l.conn.Close()
	if l.closing {
		ctx.Stop(ctx.Self())
	}
	failed := &Failed{Peer: l.cfg.Peer, Err: err}
	ctx.Send(ctx.Parent(), failed)
	for _, r := range l.routing.routed() {
		ctx.Send(r.to, failed)
	}
}

// stop ends the link: the peer hears so first, unless it has already,
// and does not reconnect.
func (l *linkActor) stop() {
	if l.ticker != nil {
		l.ticker.Close()
	}
	switch {
	case l.released():
		return
	case l.failed == nil && l.conn != nil:
		if !l.finSent {
			l.sendLink(tagFin)
		}
		l.conn.Close()
	}
	for _, f := range l.unsent {
		transport.Release(f)
	}
	l.unsent = nil
	l.routing.discard(func(Key) bool { return true })
	if l.failed == nil {
		l.cfg.Plane.fail(errStopped)
	}
}

// handler turns transport callbacks into messages to the link actor.
type handler struct {
	rt           *actors.Runtime
	self, parent *actor.PID
	peer         int
	plane        *Plane
}

// HandleFrame gives a direct frame to the plane and a control frame to
// the link's parent, unless it is stale (Strays.Stale), on the
// transport's goroutine, and posts any other to the link. Either counts
// as word from the peer for the link's watch.
func (h handler) HandleFrame(f transport.Frame) {
	if f.Header.Kind&direct != 0 {
		f.Header.Kind &^= direct
		h.plane.heard.Add(1)
		h.plane.arrive(f)
		return
	}
	if f.Header.Kind == transport.Control {
		if f.Header.Tag == ControlBye {
			h.plane.saidBye(f.Header.Seq) // before the connection's end, which may overtake the parent's mailbox
		}
		h.plane.heard.Add(1)
		if h.plane.stale(f) {
			transport.Release(f)
			return
		}
		if d := delivered(h.peer, f); !h.plane.handOn(h.rt, h.parent, d) {
			transport.Release(f)
			d.Recycle()
		}
		return
	}
	h.rt.System().Root.Send(h.self, delivered(h.peer, f))
}

func (h handler) HandleError(err error) {
	h.rt.System().Root.Send(h.self, &connFailed{err: err})
}
