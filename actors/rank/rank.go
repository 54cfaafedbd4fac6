package rank

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/actors/supervisor"
	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/fifo"
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

// Finalize stops the rank once every submitted operation has ended, then
// calls Done.
type Finalize struct{ Done func() }

// Props returns the Props of the rank actor.
func Props(rt *actors.Runtime, cfg Config) *actor.Props {
	strategy := supervisor.New(rt, supervisor.DefaultLinkPolicy)
	strategy.Temporary = func(child *actor.PID) bool {
		return strings.Contains(child.Id, "/"+opPrefix) || strings.Contains(child.Id, "/"+windowPrefix)
	}
	return rt.Props(func() actor.Actor { return newRank(rt, cfg) }, actor.WithSupervisor(strategy))
}

// Spawn starts the rank actor at the root of rt's actor system, under a
// guardian with the runtime's deterministic restart policy.
func Spawn(rt *actors.Runtime, cfg Config) *actor.PID {
	props := Props(rt, cfg).Configure(actor.WithGuardian(supervisor.New(rt, supervisor.Policy{})))
	return rt.System().Root.SpawnPrefix(props, "comm-"+cfg.Comm+"-r"+strconv.Itoa(cfg.Rank)+"-")
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

type p2pKey struct {
	peer int
	send bool
	tag  uint32
}

type rankActor struct {
	rt  *actors.Runtime
	cfg Config

	links   links
	queue   fifo.Queue[*collective.Request] // operations waiting to run, oldest first
	running *collective.Request
	// runner is the collective actor: it runs the operations one at a time,
	// and lives on after each that succeeds; nil before the first, and
	// after one failed (it stops then).
	runner   *actor.PID
	seq      uint64 // operations submitted
	collSeq  uint64 // collectives started
	ordinals map[p2pKey]uint64

	reported map[uint64]report // collective sequence number -> a peer's failure report
	// The collectives that timed out here, among the last gaveUpKept
	// started, and whom each waited for: peers stuck behind them ask.
	gaveUp map[uint64][]int
	// Probes handed to the running collective and not yet answered.
	probes []pendingProbe
	// Set once a peer failed: every later operation fails with broken.
	broken      error
	brokenRanks []int
	revoked     bool

	// failed marks the peers this rank knows failed or left, for
	// agreements; agreement is the latest one, agreePrev the one before,
	// agreeOut what they have yet to send, agreeEarly the messages of
	// ones this rank has not started.
	failed        map[int]bool
	agreeSeq      uint64
	agreement     *agreement
	agreePrev     *agreement
	agreeOut      []agreeMsg
	agreeFlushing bool
	agreeEarly    map[uint64][]agree.Msg
	agreeWatched  map[int]bool // peers whose links watch them for the agreement

	windows []openWindow

	aborted  error
	finalize func()
	closing  bool // finalizing: waiting for the links to stop
	// stopGrace cancels the bound on that wait.
	stopGrace func() bool
}

func newRank(rt *actors.Runtime, cfg Config) *rankActor {
	return &rankActor{
		rt:       rt,
		cfg:      cfg,
		ordinals: map[p2pKey]uint64{},
		reported: map[uint64]report{},
		gaveUp:   map[uint64][]int{},
	}
}

func (r *rankActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Submit:
		r.submit(ctx, m.Req)
	case *Agree:
		r.startAgree(ctx, m)
	case *Revoke:
		r.revoke(ctx, r.cfg.Rank, r.cfg.Rank)
	case *collective.Finished:
		r.finished(ctx, m)
	case *collective.PeerLost:
		r.peerLost(ctx, m)
	case *collective.ProbeAnswer:
		r.probeAnswered(ctx, m)
	case *collective.Ask:
		if r.aborted != nil {
			return
		}
		if l, err := r.connect(ctx, m.Peer); err == nil {
			ctx.Send(l.pid, collective.ControlFrame(r.cfg.CommID, m.About, collective.ControlProbe, collective.EncodeProbe(m.CollSeq)))
		}
	case *link.Delivered:
		r.control(ctx, m)
	case *link.Failed:
		r.peerFailed(ctx, m)
	case *link.Lost:
		if l := r.links.of(m.Peer); l != nil {
			l.lost = m.Err
		}
	case *Abort:
		r.abort(ctx, m.Err)
	case *Cancel:
		r.cancel(ctx, m)
	case *Finalize:
		r.finalize = m.Done
		r.next(ctx)
	case *OpenWindow:
		r.openWindow(ctx, m)
	case *CloseWindow:
		r.closeWindow(ctx, m)
	case *window.NeedLink:
		r.needLink(ctx, m)
	case *Connected:
		switch {
		case r.finalize != nil:
		case r.aborted != nil:
			// A peer that first reaches this rank after it aborted is
			// refused, as a crashed process's would be, rather than left
			// to wait on a connection nobody reads.
			if conn, err := r.cfg.Connect(m.Peer); err == nil {
				conn.Close()
			}
		default:
			r.connect(ctx, m.Peer) // a failure breaks the communicator
		}
	case closeGraceOver:
		if r.finalize != nil {
			for _, l := range r.links.order {
				if l.live {
					r.rt.Logger.Warn("link did not stop within the grace period; finalizing without it", "comm", r.cfg.Comm, "rank", r.cfg.Rank, "peer", l.peer)
					r.links.stopped(l)
				}
			}
			r.closed(ctx)
		}
	case *actor.Started:
		r.links = links{}
	case *actor.Terminated:
		if r.windowStopped(m.Who) {
			return
		}
		if r.runner != nil && r.runner.Equal(m.Who) {
			r.runner = nil
			r.runnerStopped(ctx)
			return
		}
		if l := r.links.ofActor(m.Who.Id); l != nil {
			r.links.stopped(l)
			switch {
			case r.closing:
				r.closed(ctx)
			case r.aborted == nil:
				// A link the supervisor gave up reconnecting.
				r.markFailed(ctx, l.peer)
				r.peerFailed(ctx, &link.Failed{Peer: l.peer, Err: fmt.Errorf("the link to rank %d gave up reconnecting: %v", l.peer, l.lost)})
			}
		}
	}
}

func (r *rankActor) finished(ctx actor.Context, m *collective.Finished) {
	r.answerProbes(ctx, m)
	if r.running != nil && r.running.Seq == m.Seq {
		if m.Err != nil {
			r.runner = nil // it stops after a failure
		}
		req := r.running
		r.running = nil
		req.Release()
		r.next(ctx)
	}
}

// usable reports why the rank takes no new work, or nil.
func (r *rankActor) usable() error {
	switch {
	case r.aborted != nil:
		return r.aborted
	case r.broken != nil:
		return r.broken
	case r.finalize != nil:
		return commerr.ErrFinalized
	}
	return nil
}

func (r *rankActor) submit(ctx actor.Context, req *collective.Request) {
	if err := r.usable(); err != nil {
		var ranks []int
		if err == r.broken {
			ranks = r.brokenRanks
		}
		r.reject(req, err, ranks)
		return
	}
	r.queue.Push(req)
	r.next(ctx)
}

// next starts the oldest queued operation if none is running, and completes
// a pending Finalize once nothing is left.
func (r *rankActor) next(ctx actor.Context) {
	for r.running == nil {
		req, ok := r.queue.Pop()
		if !ok {
			break
		}
		r.start(ctx, req)
	}
	if r.running == nil && r.queue.Len() == 0 && r.finalize != nil && !r.closing {
		r.closing = true
		r.sayBye(ctx)
		r.stopLinks(ctx, true)
		r.stopGrace = r.rt.After(linkCloseGrace, ctx.Self(), closeGraceOver{})
		r.closed(ctx)
	}
}

// linkCloseGrace bounds how long Finalize waits for links to flush and stop.
const linkCloseGrace = 5 * time.Second

type closeGraceOver struct{}

// closed completes a Finalize once every link has sent what it was given
// and stopped. Stopping the rank actor earlier would stop its links at once,
// dropping frames still queued in their mailboxes.
func (r *rankActor) closed(ctx actor.Context) {
	if r.links.live > 0 || r.finalize == nil {
		return // links still closing, or finalized already past the grace period
	}
	r.stopGrace()
	r.finalize()
	r.finalize = nil
	ctx.Stop(ctx.Self())
}

// connect returns the link to peer, spawning it if there is none. A peer
// that cannot be connected has failed, and the error says so.
func (r *rankActor) connect(ctx actor.Context, peer int) (*peerLink, error) {
	if l := r.links.of(peer); l != nil {
		return l, nil
	}
	if r.closing {
		// A link made now would outlive the closing of the others: a peer
		// leaving as this rank does can set a decided agreement leading
		// again, which would reach for ranks this one never talked to.
		return nil, fmt.Errorf("rank %d: the communicator is closing", peer)
	}
	conn, err := r.cfg.Connect(peer)
	if err != nil {
		r.peerFailed(ctx, &link.Failed{Peer: peer, Err: err})
		return nil, fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, peer, err)
	}
	_, lend := conn.(transport.Borrower)
	heartbeat, silence := cmp.Or(r.cfg.Heartbeat, link.DefaultHeartbeat), cmp.Or(r.cfg.Silence, link.DefaultSilence)
	if silence > 0 {
		heartbeat = min(heartbeat, silence)
	}
	props := link.Props(r.rt, link.Config{
		Comm: r.cfg.CommID, Peer: peer, Conn: conn,
		Redial:    func() (transport.Conn, error) { return r.cfg.Connect(peer) },
		Heartbeat: heartbeat, Silence: silence,
	})
	l := r.links.add(peer, ctx.SpawnPrefix(props, fmt.Sprintf("%s%d-", linkPrefix, peer)), lend)
	r.routeWindows(ctx, l)
	return l, nil
}

func (r *rankActor) start(ctx actor.Context, req *collective.Request) {
	peers := req.Peers()
	if s := r.links.setOf(peers); s != nil {
		req.Links, req.Lend = s.pids, s.lend
	} else {
		req.Links, req.Lend = make([]*actor.PID, len(peers)), make([]bool, len(peers))
		for i, peer := range peers {
			l, err := r.connect(ctx, peer)
			if err != nil {
				r.reject(req, err, []int{peer})
				return
			}
			req.Links[i], req.Lend[i] = l.pid, l.lend
		}
		r.links.keepSet(peers, req.Links, req.Lend)
	}
	if req.P2P != nil {
		for i := range req.P2P {
			m := &req.P2P[i]
			k := p2pKey{peer: m.Peer, send: m.Send, tag: m.Tag}
			m.Ordinal = r.ordinals[k]
			r.ordinals[k]++
		}
	} else {
		req.CollSeq = r.collSeq
		r.collSeq++
		if rep, ok := r.reported[req.CollSeq]; ok {
			delete(r.reported, req.CollSeq)
			collective.TellFailure(ctx, req, rep.payload)
			r.reject(req, rep.err, []int{rep.reporter})
			return
		}
	}
	r.running = req
	if r.runner != nil {
		ctx.Send(r.runner, req)
	} else {
		r.runner = ctx.SpawnPrefix(collective.Props(r.rt, req), opPrefix)
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
	req := r.running
	if req == nil || req.Ended() {
		return
	}
	req.End(&commerr.OpError{Comm: r.cfg.Comm, Op: req.Op, Seq: req.Seq, Rank: r.cfg.Rank,
		Err: errors.New("gocomms: internal error: the operation's actor failed (see the log)")})
	r.finished(ctx, &collective.Finished{Seq: req.Seq, CollSeq: req.CollSeq})
}

// reject ends an operation that never ran, and lets go of it.
func (r *rankActor) reject(req *collective.Request, err error, ranks []int) {
	req.End(&commerr.OpError{Comm: r.cfg.Comm, Op: req.Op, Seq: req.Seq, Rank: r.cfg.Rank, Ranks: ranks, Err: err})
	req.Release()
}

func (r *rankActor) abort(ctx actor.Context, err error) {
	if r.aborted != nil {
		return
	}
	r.aborted = err
	r.abortAgreement(err)
	r.revokeWindows(ctx, err)
	if r.running != nil {
		r.tell(ctx, &collective.Fail{Err: err})
	}
	r.rejectQueued(err, nil)
	r.stopLinks(ctx, false)
}

func (r *rankActor) rejectQueued(err error, ranks []int) {
	for req, ok := r.queue.Pop(); ok; req, ok = r.queue.Pop() {
		r.reject(req, err, ranks)
	}
}

func (r *rankActor) cancel(ctx actor.Context, m *Cancel) {
	if r.running != nil && r.running.Seq == m.Seq {
		r.tell(ctx, &collective.Fail{Err: m.Err, Tell: true})
		return
	}
	for i := range r.queue.Len() {
		if req := r.queue.At(i); req.Seq == m.Seq {
			r.queue.Remove(i)
			r.reject(req, m.Err, nil)
			return
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
func (r *rankActor) stopLinks(ctx actor.Context, flush bool) {
	for _, l := range r.links.order {
		if flush {
			ctx.Send(l.pid, &link.Close{})
		} else {
			ctx.Poison(l.pid)
		}
	}
}
