package rank

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/actors/supervisor"
	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// Config describes the rank.
type Config struct {
	Comm   string // communicator name
	CommID uint64
	Rank   int
	Size   int
	// Connect returns the connection to a peer. The rank calls it when an
	// operation first needs that peer or when the peer connected
	// (Connected), so that a rank holds links only to the peers it talks
	// to; the peer's link calls it again, from its own actor, for a new
	// connection after the last one broke.
	Connect func(peer int) (transport.Conn, error)
	// PeerFailed, if set, is told once of each peer this rank finds
	// failed or gone, from the rank's actor: the transport need not wait,
	// when it closes, for that peer to take its last frames.
	PeerFailed func(peer int)
	// Heartbeat and Silence are the links' watch of their peers (see
	// link.Config); zero takes link.DefaultHeartbeat and
	// link.DefaultSilence, and a negative Silence watches nothing.
	Heartbeat, Silence time.Duration
	// Lease, if set, is where the rank lends its turn while idle.
	Lease *Lease
	// ReleaseLinks has a collective link its peers as it comes to them,
	// and the rank release each link once nothing uses it (release.go):
	// the rank then holds links only to the peers its running collective
	// still exchanges frames with, not to every peer it ever did.
	ReleaseLinks bool
}

// Connected tells the rank that a peer opened a connection to it, so that
// what the peer sends before this rank needs it arrives: a probe about a
// collective this rank has not started, say.
type Connected struct{ Peer int }

// Submit queues an operation. Req is complete but for what the rank actor
// numbers: CollSeq, the P2P ordinals and Links. A point-to-point operation
// sets Req.P2P with Ordinal left zero. Seq is the caller's: it numbers every
// submission to this rank, in submission order.
type Submit struct{ Req *collective.Request }

// Abort fails the running and queued operations with Err (which should wrap
// commerr.ErrAborted) and closes every link. Later submissions fail.
type Abort struct{ Err error }

// Cancel fails the operation with sequence number Seq, if it has not ended,
// with Err; a running collective reports the failure to every rank.
type Cancel struct {
	Seq uint64
	Err error
}

// Revoke revokes the communicator, as ULFM's MPI_Comm_revoke: every
// rank's running, queued and later operations fail with ErrRevoked, except
// agreements, which are how the survivors go on.
type Revoke struct{}

// Finalize stops the rank once every submitted operation has ended, then
// calls Done.
type Finalize struct{ Done func() }

// Props returns the Props of the rank actor.
func Props(rt *actors.Runtime, cfg Config) *actor.Props {
	strategy := supervisor.New(rt, supervisor.DefaultLinkPolicy)
	strategy.Temporary = func(child *actor.PID) bool {
		return strings.Contains(child.Id, "/"+opPrefix) || strings.Contains(child.Id, "/"+windowPrefix)
	}
	return rt.SupervisedProps(func() actor.Actor { return newRank(rt, cfg) },
		actors.Supervision{Children: strategy, Guardian: supervisor.New(rt, supervisor.Policy{})})
}

// Spawn starts the rank actor at the root of rt's actor system, under a
// guardian with the runtime's deterministic restart policy.
func Spawn(rt *actors.Runtime, cfg Config) *actor.PID {
	return rt.System().Root.SpawnPrefix(Props(rt, cfg), "comm-"+cfg.Comm+"-r"+strconv.Itoa(cfg.Rank)+"-")
}

// Children's name prefixes: links are restarted when they fail, operations
// are not (their schedule cannot be replayed) and fail their Work instead.
const (
	linkPrefix = "link"
	opPrefix   = "op"
)

// pendingProbe is a probe the running collective answers: about itself,
// or, when it is an earlier collective than the one asked about (behind),
// about what holds this rank back.
type pendingProbe struct {
	peer   int
	seq    uint64 // the running operation's
	asker  uint64 // the collective the reply goes to
	behind bool
	at     uint64 // the running collective's sequence number
}

type rankActor struct {
	rt  *actors.Runtime
	cfg Config

	// sequencer decides what becomes of the operations and the
	// communicator; acts holds the actions of the steps being performed,
	// a nested step's after its caller's, borrowed for the outermost step:
	// a simulation's million idle ranks keep none.
	sequencer sequencer
	acts      *[]action

	links links
	// strays is shared by the links' planes: it answers the frames of a
	// collective running or ended here that no step takes, whose senders'
	// calls differ.
	strays *link.Strays
	// runner is the collective actor: it runs the operations one at a time,
	// and lives on after each that succeeds; nil before the first, and
	// after one failed (it stops then).
	runner   *actor.PID
	ordinals ordinals // whoever holds the turn numbers: the rank, or the lease's issuers

	// The collectives that timed out here, among the last gaveUpKept
	// started, and whom each waited for: peers stuck behind them ask.
	gaveUp map[uint64][]int
	// Probes handed to the running collective and not yet answered.
	probes []pendingProbe

	// failed lists, sorted, the peers this rank knows failed or left,
	// for agreements, whose state agrees keeps: nil until the first. A
	// list, not a set: a rank learns of few, and a simulation keeps a
	// million ranks that each learned of one.
	failed []int
	agrees *agreements
	// settled is failed, published once the communicator broke, closes or
	// aborted, when word of those peers changes nothing here: the
	// transport drops it (link.Strays.Stale). Nil until then.
	settled atomic.Pointer[[]int]

	windows []openWindow

	// adopting is the operation evAdopt takes back, until handed on;
	// deferred holds the probes that came while the turn was lent, to
	// answer once it is back.
	adopting *collective.Adoption
	deferred []deferredProbe

	// told is the word this rank spread, kept with ReleaseLinks for the
	// links it makes later: a link made then carries what one kept would
	// have.
	told []toldWord
	// held is an operation whose start waits for a link being released
	// (holdStart).
	held *collective.Request

	finalize func() // Finalize's Done, until called
	// stopGrace cancels the bound on the wait for the links to close.
	stopGrace func() bool
}

func newRank(rt *actors.Runtime, cfg Config) *rankActor {
	return &rankActor{
		rt:        rt,
		cfg:       cfg,
		sequencer: sequencer{rank: cfg.Rank},
	}
}

func (r *rankActor) Receive(ctx actor.Context) {
	r.receive(ctx)
	r.settleLease(ctx)
	if _, ok := ctx.Message().(*Submit); ok && r.cfg.Lease != nil {
		r.cfg.Lease.submitted.Add(-1) // queued here, and the turn asked back
	}
}

// settleLease lends the rank's turn once it is idle and sound, and takes
// it back once it has work of its own; a collective that runs off it
// when the communicator broke fails.
func (r *rankActor) settleLease(ctx actor.Context) {
	l, s := r.cfg.Lease, &r.sequencer
	switch {
	case l == nil:
	case !s.lent:
		if s.running == nil && s.queue.Len() == 0 { // else it is busy: spare the step
			r.step(ctx, event{kind: evLend})
		}
	case s.wantsTurn() || len(r.deferred) > 0:
		if ranks, err := s.refusal(); err != nil {
			l.direct.Break(err, ranks)
		}
		if seq, ok := l.reclaim(); ok {
			r.step(ctx, event{kind: evReclaimed, seq: seq})
		}
	}
	r.answerDeferred(ctx)
}

func (r *rankActor) receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Reclaimed:
		r.takeTurnBack(ctx)
	case *collective.Adoption:
		r.adopting = m
		r.step(ctx, event{kind: evAdopt, req: m.Request(), queued: m.Queued(), seq: m.Next()})
	case *peerLost:
		r.connectionLost(ctx, m)
	case *tellFailure:
		r.reportFailure(ctx, m)
	case *Submit:
		r.step(ctx, event{kind: evSubmit, req: m.Req})
	case *Agree:
		if r.cfg.ReleaseLinks {
			m.Done(agree.Value{}, errReleasing)
			return
		}
		r.step(ctx, event{kind: evAgree, agree: m})
	case *Revoke:
		r.step(ctx, event{kind: evRevoke, rank: r.cfg.Rank, teller: r.cfg.Rank})
	case *collective.Finished:
		r.finished(ctx, m)
	case *collective.PeerLost:
		r.step(ctx, event{kind: evPeerLost, seq: m.Seq, rank: m.Peer, err: m.Err})
	case *collective.ProbeAnswer:
		r.probeAnswered(ctx, m)
	case *collective.Ask:
		r.probePeer(ctx, m)
	case *link.Delivered:
		r.control(ctx, m)
	case *link.Failed:
		if l := r.links.of(m.Peer); l != nil && l.releasing {
			r.releaseFailed(ctx, l)
		}
		r.lost(ctx, event{kind: evPeerFailed, rank: m.Peer, err: m.Err})
	case *collective.NeedLink:
		r.linkAsked(ctx, m)
	case *collective.DoneWith:
		r.doneWith(ctx, m.Peer)
	case *link.ReleaseAsked:
		r.releaseAsked(ctx, m.Peer)
	case *link.Declined:
		r.declined(ctx, m.Peer)
	case *link.Released:
		r.released(ctx, m)
	case *link.Lost:
		if l := r.links.of(m.Peer); l != nil {
			l.lost = m.Err
		}
	case *Abort:
		r.step(ctx, event{kind: evAbort, err: m.Err})
	case *Cancel:
		r.step(ctx, event{kind: evCancel, seq: m.Seq, err: m.Err})
	case *Finalize:
		r.finalize = m.Done
		r.step(ctx, event{kind: evFinalize})
	case *OpenWindow:
		if r.cfg.ReleaseLinks {
			m.Done(nil, errReleasing)
			return
		}
		r.openWindow(ctx, m)
	case *CloseWindow:
		r.closeWindow(ctx, m)
	case *window.NeedLink:
		r.needLink(ctx, m)
	case *Connected:
		r.step(ctx, event{kind: evConnected, rank: m.Peer})
	case closeGraceOver:
		r.graceOver(ctx)
	case *actor.Started:
		r.started(ctx)
	case *actor.Terminated:
		r.terminated(ctx, m.Who)
	}
}

// publishSettled publishes the failed peers whose word is stale, once
// word of them changes nothing: a broken communicator breaks no further,
// nor does one that closes or aborted, and a known peer's failure is
// recorded (control, ControlPeerFailed). Both change only in a step
// (markFailed comes just before one), after whose end it is called.
func (r *rankActor) publishSettled() {
	s := &r.sequencer
	if s.broken == nil && !s.closing && s.aborted == nil {
		return
	}
	if p := r.settled.Load(); p == nil || len(*p) != len(r.failed) { // failed only grows
		failed := slices.Clone(r.failed)
		r.settled.Store(&failed)
	}
}

// stale reports whether h and payload are word of a failed peer that
// publishSettled published.
func (r *rankActor) stale(h transport.Header, payload []byte) bool {
	if h.Tag != collective.ControlPeerFailed {
		return false
	}
	settled := r.settled.Load()
	if settled == nil {
		return false
	}
	peer, _, err := collective.DecodePeerFailed(r.cfg.Size, payload)
	if err != nil {
		return false // the rank logs it
	}
	_, known := slices.BinarySearch(*settled, peer)
	return known
}

// takeTurnBack takes the lent turn back if the lease says it is free to
// take: the rank may have taken it back already, and even lent it again.
func (r *rankActor) takeTurnBack(ctx actor.Context) {
	if r.sequencer.lent {
		if seq, ok := r.cfg.Lease.reclaim(); ok {
			r.step(ctx, event{kind: evReclaimed, seq: seq})
		}
	}
}

// connectionLost handles a connection that ended under an operation run
// off the rank.
func (r *rankActor) connectionLost(ctx actor.Context, m *peerLost) {
	switch left := new(link.PeerLeft); {
	case r.sequencer.usable() != nil:
		// settleLease fails what runs off the rank, naming why the
		// communicator broke, as evPeerLost does on the actors.
	case errors.As(m.err, &left):
		r.cfg.Lease.direct.Gone(m.peer, m.err)
	default:
		// A lossless connection that ended lost what it carried: its
		// peer failed, and the word spreads before what runs off the
		// rank fails naming it (settleLease), as when a link fails.
		r.lost(ctx, event{kind: evPeerFailed, rank: m.peer, err: m.err})
	}
}

// reportFailure tells the live links to m's peers that a collective that
// ran off the rank failed.
func (r *rankActor) reportFailure(ctx actor.Context, m *tellFailure) {
	for _, peer := range m.peers {
		if l := r.links.of(peer); l != nil && l.live {
			link.SendControl(ctx, l.pid, l.plane, collective.ControlFrame(r.cfg.CommID, m.req, collective.ControlFailed, m.report))
		}
	}
}

// probePeer sends the running collective's probe to the peer it asks,
// connecting it if need be; an aborted rank asks nothing.
func (r *rankActor) probePeer(ctx actor.Context, m *collective.Ask) {
	if r.sequencer.aborted != nil {
		return
	}
	if l, err := r.connect(ctx, m.Peer); err == nil {
		link.SendControl(ctx, l.pid, l.plane, collective.ControlFrame(r.cfg.CommID, m.About, collective.ControlProbe, collective.EncodeProbe(m.CollSeq)))
	}
}

// graceOver finalizes without the links that have not stopped within
// linkCloseGrace.
func (r *rankActor) graceOver(ctx actor.Context) {
	if r.finalize == nil {
		return
	}
	for _, l := range r.links.order {
		if l.live {
			r.rt.Logger.Warn("link did not stop within the grace period; finalizing without it", "peer", l.peer)
			r.links.stopped(l)
		}
	}
	r.closed(ctx)
}

// started readies the rank: no links yet, the strays' reports sent to
// itself, and the lease bound to it.
func (r *rankActor) started(ctx actor.Context) {
	r.links = links{}
	self, root, rank := ctx.Self(), r.rt.System().Root, r.cfg.Rank
	r.strays = &link.Strays{Report: func(peer int, h transport.Header, ours uint64, failure []byte) {
		if report := collective.StrayReport(rank, peer, h, ours, failure); report != nil {
			root.Send(self, &tellFailure{req: h.Seq, peers: []int{peer}, report: report})
		}
	}, Stale: r.stale}
	if r.cfg.Lease != nil {
		r.cfg.Lease.bind(ctx.Self(), &r.ordinals)
	}
}

// terminated handles a child that stopped: a window, the collective
// actor, or a link.
func (r *rankActor) terminated(ctx actor.Context, who *actor.PID) {
	if r.windowStopped(who) {
		return
	}
	if r.runner != nil && r.runner.Equal(who) {
		r.runner = nil
		r.runnerStopped(ctx)
		return
	}
	if l := r.links.ofActor(who.Id); l != nil {
		r.links.stopped(l)
		switch {
		case r.sequencer.closing:
			r.closed(ctx)
		case r.sequencer.aborted == nil:
			// A link the supervisor gave up reconnecting.
			r.lost(ctx, event{kind: evPeerFailed, rank: l.peer, err: fmt.Errorf("the link to rank %d gave up reconnecting: %v", l.peer, l.lost)})
		}
	}
}

// step hands ev to the sequencer and performs the actions it decides, in
// order. Performing one may step another event, whose actions are
// appended after these and performed before the rest of these. The
// outermost step then publishes what the transport may drop
// (publishSettled).
func (r *rankActor) step(ctx actor.Context, ev event) {
	if r.acts == nil {
		r.acts = actionLists.Get().(*[]action)
		defer func() {
			actionLists.Put(r.acts)
			r.acts = nil
			r.publishSettled()
		}()
	}
	acts := r.acts
	n := len(*acts)
	*acts = r.sequencer.step(ev, *acts)
	for i := n; i < len(*acts); i++ {
		r.perform(ctx, (*acts)[i])
	}
	clear((*acts)[n:]) // keep no request alive
	*acts = (*acts)[:n]
}

// actionLists lends the outermost steps their lists of actions.
var actionLists = sync.Pool{New: func() any { return new([]action) }}

func (r *rankActor) perform(ctx actor.Context, a action) {
	switch a.kind {
	case actStart:
		r.start(ctx, a.req)
	case actRefuse:
		if r.linkUp(ctx, a.req) {
			collective.TellFailure(ctx, a.req, a.forward)
			a.req.End(r.opError(a.req, a.err, a.ranks))
			r.step(ctx, event{kind: evEnded, seq: a.req.Seq})
		}
	case actFail:
		if req := r.held; req != nil && r.sequencer.running == req {
			r.failHeld(ctx, req, a.err, a.ranks)
			break
		}
		r.tell(ctx, &collective.Fail{Err: a.err, Ranks: a.ranks, Tell: a.tell, Canceled: a.canceled, Forward: a.forward})
	case actReject:
		a.req.End(r.opError(a.req, a.err, a.ranks))
		a.req.Release()
	case actRelease:
		a.req.Release()
	case actRevokeWindows:
		r.revokeWindows(ctx, a.err)
	case actFailAgreement:
		r.abortAgreement(a.err)
	case actStartAgreement:
		r.startAgree(ctx, a.agree)
	case actRefuseAgreement:
		a.agree.Done(agree.Value{}, a.err)
	case actSpreadFailure:
		r.spread(ctx, collective.ControlPeerFailed, collective.EncodePeerFailed(a.rank, a.accuser), a.rank, a.skip)
	case actSpreadRevoke:
		r.spread(ctx, collective.ControlRevoked, collective.EncodeRevoked(a.rank), a.skip)
	case actConnect:
		r.peerConnected(ctx, a.rank)
	case actHangUp:
		if conn, err := r.cfg.Connect(a.rank); err == nil {
			conn.Close()
		}
	case actCloseLinks:
		bye := a.seq
		if l := r.cfg.Lease; l != nil {
			if m := l.Direct().FirstMismatch(); m > 0 {
				bye = min(bye, m) // as for a mismatch on the actors
			}
			if l.Direct().Failures() > 0 {
				bye = 0 // as for an operation that failed on the actors
			}
		}
		r.tellPeers(ctx, collective.ControlBye, bye, nil)
		r.stopLinks(ctx, true)
		r.stopGrace = r.rt.After(linkCloseGrace, ctx.Self(), closeGraceOver{})
		r.closed(ctx)
	case actStopLinks:
		r.stopLinks(ctx, false)
	case actLend:
		r.cfg.Lease.lend(a.seq)
	case actAdopt:
		r.cfg.Lease.adopted()
		adoption := r.adopting
		r.adopting = nil
		if !r.linkUp(ctx, a.req) {
			return
		}
		if r.runner != nil {
			ctx.Send(r.runner, adoption)
		} else {
			r.runner = r.rt.SpawnChild(ctx, collective.AdoptProducer(r.rt, adoption), opPrefix)
		}
	case actFinalized:
		r.stopGrace()
		r.finalize()
		r.finalize = nil
		ctx.Stop(ctx.Self())
	}
}

func (r *rankActor) finished(ctx actor.Context, m *collective.Finished) {
	r.answerProbes(ctx, m)
	if req := r.sequencer.running; req != nil && req.Seq == m.Seq && m.Err != nil {
		r.runner = nil // it stops after a failure
	}
	r.operationEnded(ctx) // before the next operation holds links
	r.step(ctx, event{kind: evEnded, seq: m.Seq, err: m.Err})
}

// linkCloseGrace bounds how long Finalize waits for links to flush and stop.
const linkCloseGrace = 5 * time.Second

type closeGraceOver struct{}

// closed steps evClosed once every link has sent what it was given and
// stopped. Stopping the rank actor earlier would stop its links at once,
// dropping frames still queued in their mailboxes.
func (r *rankActor) closed(ctx actor.Context) {
	if r.links.live == 0 {
		r.step(ctx, event{kind: evClosed})
	}
}

// lost records that peer ev.rank failed, for the agreements and the
// transport, then steps ev, which says how the sequencer hears of it.
func (r *rankActor) lost(ctx actor.Context, ev event) {
	r.markFailed(ctx, ev.rank, ev.err)
	r.step(ctx, ev)
}

// connect returns the link to peer, spawning it if there is none. A peer
// that cannot be connected has failed, and the error says so.
func (r *rankActor) connect(ctx actor.Context, peer int) (*peerLink, error) {
	return r.connectOr(ctx, peer, event{kind: evPeerFailed})
}

// connectOr is connect, stepping failed, with the peer and the error, for
// a peer that cannot be connected.
func (r *rankActor) connectOr(ctx actor.Context, peer int, failed event) (*peerLink, error) {
	if l := r.links.of(peer); l != nil {
		return l, nil
	}
	if r.sequencer.closing {
		// A link made now would outlive the closing of the others: a peer
		// leaving as this rank does can set a decided agreement leading
		// again, which would reach for ranks this one never talked to.
		return nil, fmt.Errorf("rank %d: the communicator is closing", peer)
	}
	conn, err := r.cfg.Connect(peer)
	if err != nil {
		failed.rank, failed.err = peer, err
		r.lost(ctx, failed)
		return nil, fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, peer, err)
	}
	_, lend := conn.(transport.Borrower)
	heartbeat, silence := cmp.Or(r.cfg.Heartbeat, link.DefaultHeartbeat), cmp.Or(r.cfg.Silence, link.DefaultSilence)
	if silence > 0 {
		heartbeat = min(heartbeat, silence)
	}
	plane := r.strays.NewPlane(peer)
	producer := link.Producer(r.rt, link.Config{
		Comm: r.cfg.CommID, Peer: peer, Conn: conn,
		Dial:      r.cfg.Connect,
		Heartbeat: heartbeat, Silence: silence, Plane: plane,
	})
	l := r.links.add(peer, r.rt.SpawnChild(ctx, producer, linkPrefix+strconv.Itoa(peer)+"-"), lend, plane)
	l.lossless = transport.IsLossless(conn)
	if r.cfg.Lease != nil {
		r.cfg.Lease.addPlane(plane)
	}
	r.routeWindows(ctx, l)
	r.retell(ctx, l)
	return l, nil
}

// start numbers req's point-to-point messages and hands req to the
// collective actor, spawning one if there is none.
func (r *rankActor) start(ctx actor.Context, req *collective.Request) {
	switch {
	case r.lazy(req):
		r.lazyLinks(ctx, req)
	case r.holdStart(ctx, req):
		return
	case !r.linkUp(ctx, req):
		return
	}
	r.ordinals.number(req)
	if r.runner != nil {
		ctx.Send(r.runner, req)
	} else {
		r.runner = r.rt.SpawnChild(ctx, collective.Producer(r.rt, req), opPrefix)
	}
}

// linkUp gives req the links to its peers, connecting those it has none to,
// and reports whether it could: a peer that cannot be connected fails req
// (evUnreachable), which is let go of by then.
func (r *rankActor) linkUp(ctx actor.Context, req *collective.Request) bool {
	peers := req.Peers()
	req.Strays = r.strays
	if s := r.links.setOf(peers); s != nil {
		req.Links, req.Lend, req.Planes = s.pids, s.lend, s.planes
		r.holdLinks(peers)
		return true
	}
	s := linkSet{peers: peers, pids: make([]*actor.PID, len(peers)), lend: make([]bool, len(peers)), planes: make([]*link.Plane, len(peers))}
	for i, peer := range peers {
		l, err := r.connectOr(ctx, peer, event{kind: evUnreachable, seq: req.Seq})
		if err != nil {
			return false
		}
		s.pids[i], s.lend[i], s.planes[i] = l.pid, l.lend, l.plane
	}
	req.Links, req.Lend, req.Planes = s.pids, s.lend, s.planes
	r.links.keepSet(s)
	r.holdLinks(peers)
	return true
}

// holdLinks marks the links to peers held by the operation starting,
// which releases none of them.
func (r *rankActor) holdLinks(peers []int) {
	if !r.cfg.ReleaseLinks {
		return
	}
	for _, peer := range peers {
		if l := r.links.of(peer); l != nil {
			l.inUse = true
		}
	}
}

// tell sends msg to the collective actor about the running operation.
// That actor may have stopped, after a failure, before its Finished is
// here: what it would have dropped goes nowhere then.
func (r *rankActor) tell(ctx actor.Context, msg any) {
	if r.runner != nil {
		ctx.Send(r.runner, msg)
	}
}

// runnerStopped handles the collective actor stopping. An actor that
// ended its operation sent Finished first, which protoactor delivers after
// Terminated: the operation stays running until then, so that a probe that
// arrives in between hears that it gave up rather than that it ended. An
// actor that stopped without ending its operation crashed, and the
// operation fails.
func (r *rankActor) runnerStopped(ctx actor.Context) {
	req := r.sequencer.running
	if req == nil || req.Ended() {
		return
	}
	req.End(r.opError(req, errors.New("gocomms: internal error: the operation's actor failed (see the log)"), nil))
	r.finished(ctx, &collective.Finished{Seq: req.Seq, CollSeq: req.CollSeq})
}

func (r *rankActor) opError(req *collective.Request, err error, ranks []int) error {
	return &commerr.OpError{Comm: r.cfg.Comm, Op: req.Op, Seq: req.Seq, Rank: r.cfg.Rank, Ranks: ranks, Err: err}
}

// tellPeers sends a control frame to every live link but those to skip.
func (r *rankActor) tellPeers(ctx actor.Context, tag uint32, collSeq uint64, payload []byte, skip ...int) {
	for _, l := range r.links.order {
		if l.live && !l.releasing && !slices.Contains(skip, l.peer) {
			link.SendControl(ctx, l.pid, l.plane, collective.ControlFrame(r.cfg.CommID, collSeq, tag, payload))
		}
	}
}

// stopLinks closes every connection. The links stay known: an operation
// still running may send to a stopped link, which drops the frame.
// Finalize closes the links with an ordinary message, so that frames
// already in their mailboxes are sent first, and each stops once its peer
// has them all. Abort stops each without waiting for its peer, but after
// what is already in its mailbox (a poison pill, not Stop, which would
// overtake it): the word of a failure this rank spreads before it aborts
// still leaves, and peers blame the failed rank, not this one's leaving.
// Control frames sent later go behind the stop (Plane.Stopping): an
// aborted rank's goodbye is dropped with them, as its peers must not take
// its leaving for one on purpose.
func (r *rankActor) stopLinks(ctx actor.Context, flush bool) {
	for _, l := range r.links.order {
		l.plane.Stopping()
		if flush {
			ctx.Send(l.pid, &link.Close{})
		} else {
			ctx.Poison(l.pid)
		}
	}
}
