package rank

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/fifo"
)

// sequencer decides the fate of a rank's operations and of its
// communicator: which operation starts next, in issue order; which fail,
// with what error naming which ranks, when a peer fails or reports a
// failure, when the rank aborts, is revoked or cancels one; and when a
// Finalize is done. It is the rank actor's state machine, as raft's is
// etcd's: step takes an event and appends the actions it calls for, which
// the actor performs in order. It spawns, sends and calls nothing, and has
// no clock, so that its decisions read as a transcript (testdata).
//
// It numbers collectives (Request.CollSeq) and otherwise only reads the
// requests it holds: ending and releasing one are actions. The actor reads
// its fields to answer probes and to gate what the sequencer does not
// decide (windows, probes, links), and changes them only through step.
type sequencer struct {
	rank int // this rank: it accuses the peers whose link failed

	queue   fifo.Queue[*collective.Request] // waiting to start, oldest first
	running *collective.Request             // started and not ended
	collSeq uint64                          // collectives started
	// unreached counts the collectives called that could not reach a
	// peer, which the next one is numbered in place of: the goodbye
	// counts them as called.
	unreached uint64
	// faulted says an operation failed here for another reason than a
	// mismatch: the goodbye then counts nothing, since the caller may have
	// given up on calls its peers make. After a mismatch, which is the
	// program's, the count is what the peers need.
	faulted bool
	// mismatched is 1 + the first collective that failed here for a
	// mismatch, 0 if none did: the goodbye counts none from it on, as
	// this rank's part in it may never have been played.
	mismatched uint64

	reported map[uint64]report // collective sequence number -> a peer's failure report
	left     []int             // peers that said goodbye: their link's end is no failure

	// Set once a peer failed or the communicator was revoked: every later
	// operation fails with broken.
	broken      error
	brokenRanks []int
	revoked     bool
	aborted     error
	finalizing  bool // Finalize came
	// lent says the rank lent its turn (Lease): collectives run off it,
	// numbered by the lease, and nothing starts here until it is back.
	lent      bool
	closing   bool // finalizing and idle: the links close
	finalized bool

	out []action // step's result, while it runs
}

// eventKind says what happened; the event's fields it uses follow each.
type eventKind uint8

const (
	// evSubmit: req was submitted.
	evSubmit eventKind = iota
	// evEnded: the running operation seq ended, as its collective actor
	// said, or as the actor refused it (actRefuse).
	evEnded
	// evUnreachable: the running operation seq never started: its peer
	// rank could not be connected, with err.
	evUnreachable
	// evCancel: the caller cancels operation seq with err.
	evCancel
	// evAbort: the caller aborts the rank with err.
	evAbort
	// evFinalize: the caller finalizes the rank.
	evFinalize
	// evClosed: no link is live, every one having stopped or been given up
	// on.
	evClosed
	// evPeerFailed: the link to rank failed with err, or rank could not be
	// connected.
	evPeerFailed
	// evBye: rank said goodbye: it is finalizing.
	evBye
	// evPeerReported: teller says that accuser found rank failed.
	evPeerReported
	// evRevoke: rank revoked the communicator, as teller says (this rank,
	// when both are).
	evRevoke
	// evCollFailed: rank reported that collective seq (a CollSeq) failed
	// with err; payload is its report, to pass on.
	evCollFailed
	// evPeerLost: the running operation seq waits on rank, whose
	// connection failed with err.
	evPeerLost
	// evConnected: rank opened a connection to this rank.
	evConnected
	// evAgree: the caller starts agreement agree.
	evAgree
	// evLend: the rank may lend its turn, if it is idle and sound.
	evLend
	// evReclaimed: the turn is back; seq numbers the next collective.
	evReclaimed
	// evAdopt: req, an operation that ran off the rank, timed out and
	// comes back to run here; the turn comes back with it, the next
	// collective numbered seq, and queued, the operations issued after it
	// off the rank, which start here after it, before any submitted here.
	evAdopt
)

type event struct {
	kind    eventKind
	req     *collective.Request
	queued  []*collective.Request
	agree   *Agree
	seq     uint64
	rank    int
	accuser int
	teller  int
	err     error
	payload []byte
}

// actionKind says what the actor is to do; the action's fields it uses
// follow each.
type actionKind uint8

const (
	// actStart: connect req's peers, number its point-to-point messages
	// and hand it to the collective actor. A peer that cannot be connected
	// is stepped as evUnreachable.
	actStart actionKind = iota
	// actRefuse: connect req's peers, pass a peer's report of its
	// failure (forward) on to them, end it with err naming ranks, and
	// step evEnded.
	actRefuse
	// actFail: ask the running operation seq to fail with err naming
	// ranks; tell says it reports err to its peers, canceled that err is
	// its caller's cancellation (they fail with ErrPeerCanceled), and
	// forward is a peer's report for it to pass on instead.
	actFail
	// actReject: end req, which never started, with err naming ranks, and
	// let go of it.
	actReject
	// actRelease: let go of req, which ended.
	actRelease
	// actRevokeWindows: tell every window that the communicator broke with
	// err.
	actRevokeWindows
	// actFailAgreement: fail the agreement still deciding, with err.
	actFailAgreement
	// actStartAgreement: start agreement agree.
	actStartAgreement
	// actRefuseAgreement: fail agreement agree with err.
	actRefuseAgreement
	// actSpreadFailure: tell every live link but rank's and skip's that
	// accuser found rank failed.
	actSpreadFailure
	// actSpreadRevoke: tell every live link but skip's that rank revoked
	// the communicator.
	actSpreadRevoke
	// actConnect: make the link to rank, if there is none; a failure is
	// stepped as evPeerFailed.
	actConnect
	// actHangUp: close rank's connection, as a crashed process would.
	actHangUp
	// actCloseLinks: say goodbye (seq: ControlBye's), close every link after what it holds,
	// bound the wait, and step evClosed once no link is live.
	actCloseLinks
	// actStopLinks: stop every link after what its mailbox holds, without
	// waiting for its peer.
	actStopLinks
	// actFinalized: tell Finalize the rank is done, and stop it.
	actFinalized
	// actLend: lend the turn; seq numbers the next collective.
	actLend
	// actAdopt: hand req, which comes back from off the rank, to the
	// collective actor, to carry on with.
	actAdopt
)

type action struct {
	kind     actionKind
	req      *collective.Request
	agree    *Agree
	seq      uint64
	rank     int
	accuser  int
	skip     int
	err      error
	ranks    []int
	canceled bool
	tell     bool
	forward  []byte
}

// report is a peer's word that a collective failed, kept until this rank
// starts the collective, and then passed on to its peers.
type report struct {
	err      error
	reporter int
	payload  []byte
}

// step takes ev and appends to acts the actions it calls for, to be
// performed in order. Performing an action may step another event (a peer
// that cannot be connected, a refused operation's end): the actions that
// can (actStart, actRefuse, actConnect, actStartAgreement, actCloseLinks)
// come last, so that none of ev's is performed after a nested event
// changed what it was decided on.
func (s *sequencer) step(ev event, acts []action) []action {
	s.out = acts
	switch ev.kind {
	case evSubmit:
		s.submit(ev.req)
	case evEnded:
		s.ended(ev.seq, ev.err)
	case evUnreachable:
		s.unreachable(ev)
	case evCancel:
		s.cancel(ev.seq, ev.err)
	case evAbort:
		s.abort(ev.err)
	case evFinalize:
		s.finalizing = true
		s.next()
	case evClosed:
		if s.closing && !s.finalized {
			s.finalized = true
			s.emit(action{kind: actFinalized})
		}
	case evPeerFailed:
		s.peerFailed(ev.rank, ev.err)
	case evBye:
		if !slices.Contains(s.left, ev.rank) {
			s.left = append(s.left, ev.rank)
		}
	case evPeerReported:
		s.peerReported(ev)
	case evRevoke:
		s.revoke(ev.rank, ev.teller)
	case evCollFailed:
		s.collFailed(ev)
	case evPeerLost:
		s.peerLost(ev)
	case evConnected:
		s.connected(ev.rank)
	case evLend:
		s.lend()
	case evReclaimed:
		if s.lent {
			s.takeTurn(ev.seq)
			s.next()
		}
	case evAdopt:
		s.adopt(ev)
	case evAgree:
		s.agree(ev.agree)
	}
	acts, s.out = s.out, nil
	return acts
}

// submit queues req, or rejects it if the rank takes no new work.
func (s *sequencer) submit(req *collective.Request) {
	if ranks, err := s.refusal(); err != nil {
		s.emit(action{kind: actReject, req: req, err: err, ranks: ranks})
		return
	}
	s.queue.Push(req)
	s.next()
}

// ended lets go of the running operation seq, which ended with err, and
// starts the next.
func (s *sequencer) ended(seq uint64, err error) {
	s.fault(err)
	req := s.running
	if req == nil || req.Seq != seq {
		return
	}
	if req.P2P == nil && s.mismatched == 0 && errors.Is(err, commerr.ErrInvalidArgument) {
		s.mismatched = req.CollSeq + 1
	}
	s.running = nil
	s.emit(action{kind: actRelease, req: req})
	s.next()
}

// peerReported breaks the communicator on a peer's word that another
// failed, and passes the word on.
func (s *sequencer) peerReported(ev event) {
	if s.closing || s.aborted != nil || s.broken != nil {
		return
	}
	s.breakComm(&commerr.Accusation{Accuser: ev.accuser, Err: fmt.Errorf("%w: rank %d", commerr.ErrPeerFailed, ev.rank)}, ev.rank)
	s.emit(action{kind: actSpreadFailure, rank: ev.rank, accuser: ev.accuser, skip: ev.teller})
}

// peerLost fails the running operation ev.seq, whose peer ev.rank's
// connection failed.
func (s *sequencer) peerLost(ev event) {
	if s.running == nil || s.running.Seq != ev.seq {
		return
	}
	// The peer may have left because the communicator broke: that
	// failure is the one to name.
	err, ranks := s.broken, s.brokenRanks
	if err == nil {
		err, ranks = collective.LostPeerError(ev.rank, s.running, ev.err), []int{ev.rank}
	}
	// A peer that finalized early is a mismatch, which the ranks
	// waiting on this one learn from it: they see no failure.
	s.emit(action{kind: actFail, seq: ev.seq, err: err, ranks: ranks, tell: errors.Is(err, commerr.ErrInvalidArgument)})
}

// connected links back to peer, which opened a connection to this rank.
func (s *sequencer) connected(peer int) {
	switch {
	case s.finalizing:
	case s.aborted != nil:
		// A peer that first reaches this rank after it aborted is
		// refused, as a crashed process's would be, rather than left
		// to wait on a connection nobody reads.
		s.emit(action{kind: actHangUp, rank: peer})
	default:
		s.emit(action{kind: actConnect, rank: peer})
	}
}

// lend lends the turn if the rank is idle and sound.
func (s *sequencer) lend() {
	if s.running == nil && s.queue.Len() == 0 && !s.lent && s.usable() == nil && len(s.reported) == 0 {
		s.lent = true
		s.emit(action{kind: actLend, seq: s.collSeq})
	}
}

// adopt takes the turn back with ev.req, which ran off the rank, running
// it here ahead of ev.queued, and fails them if the rank broke meanwhile.
func (s *sequencer) adopt(ev event) {
	s.takeTurn(ev.seq)
	s.running = ev.req
	s.queueFirst(ev.queued)
	s.emit(action{kind: actAdopt, req: ev.req})
	if err := s.usable(); err != nil {
		s.emit(action{kind: actFail, seq: ev.req.Seq, err: err, ranks: s.brokenRanks})
		s.rejectQueued(err, s.brokenRanks)
	}
}

// agree starts agreement a, unless the rank aborted or is finalizing. A
// broken or revoked communicator still agrees: that is how its survivors
// go on.
func (s *sequencer) agree(a *Agree) {
	switch {
	case s.aborted != nil:
		s.emit(action{kind: actRefuseAgreement, agree: a, err: s.aborted})
	case s.finalizing:
		s.emit(action{kind: actRefuseAgreement, agree: a, err: commerr.ErrFinalized})
	default:
		s.emit(action{kind: actStartAgreement, agree: a})
	}
}

func (s *sequencer) emit(a action) {
	switch a.kind {
	case actFail, actReject, actRefuse:
		s.fault(a.err)
	}
	s.out = append(s.out, a)
}

// fault records that an operation failed with err.
func (s *sequencer) fault(err error) {
	s.faulted = s.faulted || err != nil && !errors.Is(err, commerr.ErrInvalidArgument)
}

// usable reports why the rank takes no new work, or nil.
func (s *sequencer) usable() error {
	switch {
	case s.aborted != nil:
		return s.aborted
	case s.broken != nil:
		return s.broken
	case s.finalizing:
		return commerr.ErrFinalized
	}
	return nil
}

// refusal is usable's error, with the ranks it names: the failed ones,
// when the communicator broke.
func (s *sequencer) refusal() ([]int, error) {
	err := s.usable()
	if err != nil && err == s.broken {
		return s.brokenRanks, err
	}
	return nil, err
}

// runs reports whether the running operation is collective collSeq.
func (s *sequencer) runs(collSeq uint64) bool {
	return s.running != nil && s.running.P2P == nil && s.running.CollSeq == collSeq
}

// next starts the oldest queued operation if none is running, one at a
// time, and closes the links for a Finalize once nothing is left.
func (s *sequencer) next() {
	switch {
	case s.running != nil, s.lent:
	case s.queue.Len() > 0:
		req, _ := s.queue.Pop()
		s.start(req)
	case s.finalizing && !s.closing:
		s.closing = true
		// The goodbye counts the collectives called (ControlBye), up to
		// the first mismatch, unless one failed otherwise: the caller may
		// have given up on calls its peers make, and a broken
		// communicator refuses them unnumbered.
		bye := s.collSeq + s.unreached + 1
		if s.mismatched > 0 {
			bye = min(bye, s.mismatched)
		}
		if s.faulted || s.broken != nil || s.aborted != nil {
			bye = 0
		}
		s.emit(action{kind: actCloseLinks, seq: bye})
	}
}

// start numbers req and starts it, or refuses it if a peer reported its
// collective failed already.
func (s *sequencer) start(req *collective.Request) {
	s.running = req
	if req.P2P == nil {
		req.CollSeq = s.collSeq
		s.collSeq++
		if rep, ok := s.reported[req.CollSeq]; ok {
			delete(s.reported, req.CollSeq)
			s.emit(action{kind: actRefuse, req: req, err: rep.err, ranks: []int{rep.reporter}, forward: rep.payload})
			return
		}
	}
	s.emit(action{kind: actStart, req: req})
}

// unreachable fails the running operation, which could not connect a peer,
// and the communicator with it. The operation never started: its
// collective is numbered anew, so that a peer's probe about it hears this
// rank has not reached it.
func (s *sequencer) unreachable(ev event) {
	req := s.running
	if req == nil || req.Seq != ev.seq {
		return
	}
	s.running = nil
	if req.P2P == nil {
		s.collSeq--
		s.unreached++
	}
	s.peerFailed(ev.rank, ev.err)
	s.emit(action{kind: actReject, req: req, err: fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, ev.rank, ev.err), ranks: []int{ev.rank}})
	s.next()
}

// A peer whose connection fails without saying goodbye has failed, and so
// has the communicator: as with NCCL, every later operation fails (until
// the communicator is rebuilt), instead of each one waiting out its
// timeout for a rank that is gone or for a survivor that gave up. The rank
// that sees the failure tells the peers it has links to, and each of them
// tells theirs, once: the word floods the ranks that talk to each other,
// over links that exist anyway, so that ranks that do not talk to the
// failed one directly stop too.

// peerFailed handles the failure of the link to a peer.
func (s *sequencer) peerFailed(peer int, cause error) {
	if slices.Contains(s.left, peer) || s.closing || s.aborted != nil || s.broken != nil {
		return
	}
	s.breakComm(fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, peer, cause), peer)
	s.emit(action{kind: actSpreadFailure, rank: peer, accuser: s.rank, skip: peer})
}

// revoke revokes the communicator at this rank, as by revoker, and passes
// the word on over every link but the teller's, once: it floods the ranks
// that talk to each other, as a failure does.
func (s *sequencer) revoke(revoker, teller int) {
	if s.revoked || s.aborted != nil || s.closing {
		return
	}
	s.revoked = true
	if s.broken == nil {
		s.breakComm(fmt.Errorf("%w by rank %d", commerr.ErrRevoked, revoker), revoker)
	}
	s.emit(action{kind: actSpreadRevoke, rank: revoker, skip: teller})
}

// breakComm fails the running operation and every queued one, and every
// later one, with err naming the failed rank.
func (s *sequencer) breakComm(err error, failed int) {
	s.broken, s.brokenRanks = err, []int{failed}
	if s.running != nil {
		s.emit(action{kind: actFail, seq: s.running.Seq, err: err, ranks: s.brokenRanks})
	}
	s.rejectQueued(err, s.brokenRanks)
	s.emit(action{kind: actRevokeWindows, err: err})
}

func (s *sequencer) abort(err error) {
	if s.aborted != nil {
		return
	}
	s.aborted = err
	s.emit(action{kind: actFailAgreement, err: err})
	s.emit(action{kind: actRevokeWindows, err: err})
	if s.running != nil {
		s.emit(action{kind: actFail, seq: s.running.Seq, err: err})
	}
	s.rejectQueued(err, nil)
	s.emit(action{kind: actStopLinks})
}

// queueFirst queues reqs, in order, ahead of those queued already: they
// were issued first.
func (s *sequencer) queueFirst(reqs []*collective.Request) {
	if len(reqs) == 0 {
		return
	}
	var q fifo.Queue[*collective.Request]
	for _, req := range reqs {
		q.Push(req)
	}
	for req, ok := s.queue.Pop(); ok; req, ok = s.queue.Pop() {
		q.Push(req)
	}
	s.queue = q
}

func (s *sequencer) rejectQueued(err error, ranks []int) {
	for req, ok := s.queue.Pop(); ok; req, ok = s.queue.Pop() {
		s.emit(action{kind: actReject, req: req, err: err, ranks: ranks})
	}
}

// cancel fails operation seq if it has not ended: a running collective
// reports the failure to every rank.
func (s *sequencer) cancel(seq uint64, err error) {
	if s.running != nil && s.running.Seq == seq {
		s.emit(action{kind: actFail, seq: seq, err: err, canceled: true, tell: true})
		return
	}
	for i := range s.queue.Len() {
		if req := s.queue.At(i); req.Seq == seq {
			s.queue.Remove(i)
			s.emit(action{kind: actReject, req: req, err: err})
			return
		}
	}
}

// collFailed handles a peer's report that a collective failed: the running
// one fails, passing the report on; one this rank has yet to start keeps
// it until then.
func (s *sequencer) collFailed(ev event) {
	failure := ev.err
	switch {
	case ev.seq >= s.collSeq:
		if _, ok := s.reported[ev.seq]; !ok {
			if s.reported == nil {
				s.reported = map[uint64]report{}
			}
			s.reported[ev.seq] = report{err: failure, reporter: ev.rank, payload: slices.Clone(ev.payload)}
		}
	case s.runs(ev.seq):
		s.emit(action{kind: actFail, seq: s.running.Seq, err: failure, ranks: []int{ev.rank}, forward: slices.Clone(ev.payload)})
	}
}

// wantsTurn reports whether the rank, having lent its turn, wants it back:
// it has work of its own, a report to act on, or it broke.
func (s *sequencer) wantsTurn() bool {
	return s.lent && (s.queue.Len() > 0 || s.finalizing || len(s.reported) > 0 || s.usable() != nil)
}

// takeTurn records that the turn is back, the next collective numbered
// collSeq, and forgets the reports about those that ran off the rank.
func (s *sequencer) takeTurn(collSeq uint64) {
	s.lent = false
	s.collSeq = collSeq
	for seq := range s.reported {
		if seq < collSeq {
			delete(s.reported, seq)
		}
	}
}
