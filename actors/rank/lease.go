package rank

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
)

// Lease lends the rank's turn to run collectives to whoever issues one
// while the rank is idle: the collective then runs on a
// collective.Direct, on the caller's goroutine and the transports', with
// no mailbox in between. The rank stays the control plane: it lends only
// when nothing is queued or running and the communicator is sound, takes
// its turn back before anything it must order (a submission, a Finalize,
// a peer's report), and fails the collective running off it when the
// communicator breaks.
//
// Its word packs the sequence number of the next collective with the
// lending flags, so that taking the turn and numbering the collective
// are one compare-and-swap.
type Lease struct {
	word   atomic.Uint64
	direct *collective.Direct
	// submitted counts the submissions on their way to the rank: none
	// may be overtaken by a collective that takes the turn.
	submitted atomic.Int64
	paused    atomic.Bool // a waiting caller paused its polling since the last HandBack

	mu     sync.Mutex
	planes []*link.Plane // sorted by peer; copied on write
	rank   *actor.PID
	rt     *actors.Runtime
}

const (
	lent   uint64 = 1 << iota // the rank is idle and lends its turn
	held                      // a collective runs off the rank
	wanted                    // the rank wants its turn back
	flags  = 8                // bits the flags take below the sequence number
)

// Reclaimed tells the rank that the collective that held its turn when it
// wanted it back has ended.
type Reclaimed struct{}

// NewLease returns the lease of a rank that runs on rt: Config.Lease.
func NewLease(rt *actors.Runtime) *Lease {
	l := &Lease{rt: rt}
	l.direct = collective.NewDirect(rt, l.tellFailure,
		func(a *collective.Adoption) { rt.System().Root.Send(l.rank, a) },
		func(peer int, err error) { rt.System().Root.Send(l.rank, &peerLeft{peer: peer, err: err}) })
	return l
}

// peerLeft is a connection that ended, after its peer said goodbye, under
// a collective run off the rank: the rank passes it on (Direct.Gone)
// after what the peer sent before, which its link handed on first.
type peerLeft struct {
	peer int
	err  error
}

// Direct returns what runs the collectives issued while the turn is lent.
func (l *Lease) Direct() *collective.Direct { return l.direct }

// Acquire takes the rank's turn if it is lent and free, and no
// submission is on its way to the rank, for a collective to run on
// Direct: it returns the collective's sequence number. Calls to Acquire
// and Submitting must not overlap.
func (l *Lease) Acquire() (uint64, bool) {
	w := l.word.Load()
	if w&(1<<flags-1) != lent || l.submitted.Load() != 0 || !l.direct.Ready() || !l.word.CompareAndSwap(w, w|held) {
		return 0, false
	}
	return w >> flags, true
}

// Submitting records that a Submit is on its way to the rank: a
// collective issued after it must not take the turn before the rank has
// queued it. Issues come one at a time, so none takes the turn between
// the two.
func (l *Lease) Submitting() { l.submitted.Add(1) }

// Release gives the turn back; ran says the collective numbered at
// Acquire ran, so that the next is numbered after it.
func (l *Lease) Release(ran bool) {
	for {
		w := l.word.Load()
		next := w &^ held
		if ran {
			next += 1 << flags
		}
		if l.word.CompareAndSwap(w, next) {
			if w&wanted != 0 {
				l.rt.System().Root.Send(l.rank, &Reclaimed{})
			}
			return
		}
	}
}

// Planes appends the planes to peers to dst, and reports whether every
// one carries direct frames now.
func (l *Lease) Planes(peers []int, dst []*link.Plane) ([]*link.Plane, bool) {
	l.mu.Lock()
	planes := l.planes
	l.mu.Unlock()
	for _, peer := range peers {
		i, ok := slices.BinarySearchFunc(planes, peer, func(p *link.Plane, peer int) int { return p.Peer() - peer })
		if !ok || !planes[i].Direct() {
			return dst, false
		}
		dst = append(dst, planes[i])
	}
	return dst, true
}

// Paused records that a waiting caller paused its polling
// (transport.Poller.Paused): until HandBack, the connections it polled
// may leave their reading to pollers.
func (l *Lease) Paused() { l.paused.Store(true) }

// HandBack tells the connections of every plane that nobody polls them
// now, if a caller paused since the last time: an operation the actors
// run takes its frames from their transports' goroutines, which must not
// wait for a poller that paused. An actor-run loop, which polls nothing,
// pays one atomic swap per submission.
func (l *Lease) HandBack() {
	if !l.paused.Swap(false) {
		return
	}
	l.mu.Lock()
	planes := l.planes
	l.mu.Unlock()
	for _, p := range planes {
		if po := p.Poller(); po != nil {
			po.Polling(true)
			po.Polling(false)
		}
	}
}

// bind tells the lease its rank.
func (l *Lease) bind(rank *actor.PID) {
	l.mu.Lock()
	l.rank = rank
	l.mu.Unlock()
}

// addPlane makes the plane of a new link known.
func (l *Lease) addPlane(p *link.Plane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, _ := slices.BinarySearchFunc(l.planes, p.Peer(), func(q *link.Plane, peer int) int { return q.Peer() - peer })
	l.planes = slices.Insert(slices.Clip(l.planes), i, p)
}

// lend lends the turn, the next collective being numbered collSeq.
func (l *Lease) lend(collSeq uint64) { l.word.Store(collSeq<<flags | lent) }

// reclaim takes the turn back: it returns the number of the next
// collective, or, while a collective holds the turn, reports that a
// Reclaimed follows once it ends (a Reclaimed may also come after the
// turn is back: reclaim tells).
func (l *Lease) reclaim() (uint64, bool) {
	w := l.word.Or(wanted)
	if w&held != 0 {
		return 0, false
	}
	l.word.Store(w >> flags << flags)
	return w >> flags, true
}

// adopted clears the word: the collective that held the turn timed out
// and came back to the rank, which runs it now.
func (l *Lease) adopted() { l.word.Store(0) }

// tellFailure reports, through the rank, that req failed off it.
func (l *Lease) tellFailure(req *collective.Request, report []byte) {
	l.rt.System().Root.Send(l.rank, &tellFailure{req: req.CollSeq, peers: slices.Clone(req.Peers()), report: report})
}

// tellFailure asks the rank to report that a collective that ran off it
// failed.
type tellFailure struct {
	req    uint64
	peers  []int
	report []byte
}
