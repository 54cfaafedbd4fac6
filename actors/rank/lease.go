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

// Lease lends the rank's turn to run operations to whoever issues one
// while the rank is idle: a collective, a point-to-point operation or a
// batch then runs on a collective.Direct, on the caller's goroutine and
// the transports', with no mailbox in between, and so do the operations
// issued after it, queued there in issue order, until the rank takes its
// turn back. The rank stays the control plane: it lends only when nothing
// is queued or running with it and the communicator is sound, takes its
// turn back before anything it must order (a submission, a Finalize, a
// peer's report), and fails the operations off it when the communicator
// breaks.
//
// Its word packs the sequence number of the next collective, the count
// of operations on Direct and the lending flags, so that taking the turn
// and numbering the operation are one compare-and-swap.
type Lease struct {
	word   atomic.Uint64
	direct *collective.Direct
	// submitted counts the submissions on their way to the rank: none
	// may be overtaken by an operation that takes the turn.
	submitted atomic.Int64
	paused    atomic.Bool // a waiting caller paused its polling since the last HandBack

	// ordinals is the rank's numbering of point-to-point messages, which
	// issuers use while they hold the turn.
	ordinals *ordinals

	mu     sync.Mutex
	planes []*link.Plane // sorted by peer; copied on write
	rank   *actor.PID
	rt     *actors.Runtime
}

// The word, from its low bits: the flags, the count of operations that
// hold the turn (running or queued on Direct), the next collective's
// sequence number.
const (
	lent       uint64 = 1 << iota // the rank is idle and lends its turn
	wanted                        // the rank wants its turn back
	countShift = 2
	countBits  = 22 // a queue of up to 4 Mi operations: more go to the rank
	one        = 1 << countShift
	countMask  = (1<<countBits - 1) << countShift
	flags      = countShift + countBits // bits below the sequence number
)

// held returns the count of operations that hold the turn in w.
func held(w uint64) uint64 { return w & countMask >> countShift }

// Reclaimed tells the rank that the operations that held its turn when
// it wanted it back have ended.
type Reclaimed struct{}

// NewLease returns the lease of a rank that runs on rt: Config.Lease.
func NewLease(rt *actors.Runtime) *Lease {
	l := &Lease{rt: rt}
	l.direct = collective.NewDirect(rt, owner{l})
	return l
}

// peerLost is a connection that ended under an operation run off the
// rank, which the rank handles after what it heard before, which its
// links handed on first.
type peerLost struct {
	peer int
	err  error
}

// Direct returns what runs the operations issued while the turn is lent.
func (l *Lease) Direct() *collective.Direct { return l.direct }

// Acquire takes the rank's turn for req, if it is lent and no submission
// is on its way to the rank, to run on Direct, and numbers it: its
// collective's sequence number, or its messages' ordinals. It reports
// whether req is the first that holds the turn, which the others queue
// behind. Calls to Acquire and Submitting must not overlap.
func (l *Lease) Acquire(req *collective.Request) (first, ok bool) {
	var w, n uint64
	for {
		w = l.word.Load()
		n = held(w)
		next := w + one
		if req.P2P == nil {
			next += 1 << flags
		}
		if w&(lent|wanted) != lent || n == countMask>>countShift || l.submitted.Load() != 0 ||
			n == 0 && !l.direct.Ready() {
			return false, false
		}
		if l.word.CompareAndSwap(w, next) {
			break
		}
		// An operation ended meanwhile, on another goroutine: look again.
	}
	if req.P2P == nil {
		req.CollSeq = w >> flags
	} else {
		l.ordinals.number(req)
	}
	return n == 0, true
}

// Submitting records that a Submit is on its way to the rank: an
// operation issued after it must not take the turn before the rank has
// queued it. Issues come one at a time, so none takes the turn between
// the two.
func (l *Lease) Submitting() { l.submitted.Add(1) }

// Release ends an operation's hold on the turn: it ended.
func (l *Lease) Release() {
	w := l.word.Add(^uint64(one - 1)) // less one
	if held(w) == 0 && w&wanted != 0 {
		l.rt.System().Root.Send(l.rank, &Reclaimed{})
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

// bind tells the lease its rank, and the rank's numbering of
// point-to-point messages, before the rank first lends its turn.
func (l *Lease) bind(rank *actor.PID, o *ordinals) {
	l.mu.Lock()
	l.rank, l.ordinals = rank, o
	l.mu.Unlock()
}

// addPlane makes the plane of a new link known.
func (l *Lease) addPlane(p *link.Plane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, _ := slices.BinarySearchFunc(l.planes, p.Peer(), func(q *link.Plane, peer int) int { return q.Peer() - peer })
	l.planes = slices.Insert(slices.Clip(l.planes), i, p)
}

// removePlane forgets the plane of a link being released.
func (l *Lease) removePlane(p *link.Plane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.planes, p); i >= 0 {
		l.planes = slices.Delete(slices.Clone(l.planes), i, i+1)
	}
}

// lend lends the turn, the next collective being numbered collSeq.
func (l *Lease) lend(collSeq uint64) { l.word.Store(collSeq<<flags | lent) }

// reclaim takes the turn back: it returns the number of the next
// collective, or, while operations hold the turn, reports that a
// Reclaimed follows once they end (a Reclaimed may also come after the
// turn is back: reclaim tells).
func (l *Lease) reclaim() (uint64, bool) {
	w := l.word.Or(wanted)
	if held(w) != 0 {
		return 0, false
	}
	l.word.Store(w >> flags << flags)
	return w >> flags, true
}

// adopted clears the word: the operation that held the turn timed out
// and came back to the rank, which runs it now.
func (l *Lease) adopted() { l.word.Store(0) }

// owner is the rank as a Direct's collective.Owner.
type owner struct{ l *Lease }

// TellFailure reports, through the rank, that req failed off it.
func (o owner) TellFailure(req *collective.Request, report []byte) {
	o.l.rt.System().Root.Send(o.l.rank, &tellFailure{req: req.CollSeq, peers: slices.Clone(req.Peers()), report: report})
}

// Withdraw takes the turn back from Direct, whose operation timed out:
// no other takes it until the rank lends it again.
func (o owner) Withdraw() (int, uint64) {
	w := o.l.word.Or(wanted)
	return int(held(w)), w >> flags
}

func (o owner) HandOver(a *collective.Adoption) { o.l.rt.System().Root.Send(o.l.rank, a) }

func (o owner) Settle(peer int, err error) {
	o.l.rt.System().Root.Send(o.l.rank, &peerLost{peer: peer, err: err})
}

// tellFailure asks the rank to report that a collective that ran off it
// failed.
type tellFailure struct {
	req    uint64
	peers  []int
	report []byte
}
