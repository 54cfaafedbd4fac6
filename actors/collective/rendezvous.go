package collective

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// RendezvousMin is the largest message sent at once, eagerly: a larger
// one waits at its sender until its receiver has posted (link.Offer),
// so that a receiver holds at most this much of a message it did not
// post yet. Above it, the round trip costs little beside the transfer
// (docs/DATA-PLANE.md).
const RendezvousMin = 1 << 20

// awaiting is the large messages an operation offered their receivers,
// which go once each receiver has posted. The operation ends here and
// gives the rank's turn back without waiting for them, so that the
// operations issued after it run (the receive a ring of sends waits
// for), but its Work ends, and its request is released, only once they
// all went: Request.End and Release wait for them. Its methods may be
// called from any goroutine.
type awaiting struct {
	rt  *actors.Runtime
	req *Request

	mu      sync.Mutex
	left    int   // offers not yet done, and 1 until the operation ends here
	err     error // the operation's, or the first offer's failure
	offered []offered
	timer   *actors.Timer
	// finished: the Work ended; release: the issuer released the
	// request before it did.
	finished, release bool
}

// Pending holds a rank's operations that ended with messages still on
// offer: a cancel of one takes them back (Cancel), as Direct and the
// rank cancel an operation still running.
type Pending struct {
	n   atomic.Int32 // len(ops), read without the lock by a caller with none
	mu  sync.Mutex
	ops []*awaiting
}

// Cancel fails the operation numbered seq, if its messages are still
// on offer, with err: the offers not cleared yet are taken back.
func (p *Pending) Cancel(seq uint64, err error) {
	if a := p.find(seq); a != nil {
		a.cancel(err)
	}
}

// Holds reports whether the operation numbered seq ended with
// messages still on offer.
func (p *Pending) Holds(seq uint64) bool { return p.find(seq) != nil }

// Pollers appends to dst the connections of the receivers of operation
// seq's messages still on offer that a waiting goroutine may poll
// (link.Plane.Poller): their clearances come on them. The number it
// returns is 1 while seq has some, 0 else, as Direct.Pollers's is the
// operation running.
func (p *Pending) Pollers(seq uint64, dst []transport.Poller) ([]transport.Poller, uint64) {
	a := p.find(seq)
	if a == nil {
		return dst, 0
	}
	for _, o := range a.waiting() {
		if po := o.plane.Poller(); po != nil && !slices.Contains(dst, po) {
			dst = append(dst, po)
		}
	}
	return dst, 1
}

func (p *Pending) find(seq uint64) *awaiting {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.ops {
		if a.req.Seq == seq {
			return a
		}
	}
	return nil
}

func (p *Pending) add(a *awaiting) {
	p.mu.Lock()
	p.ops = append(p.ops, a)
	p.n.Store(int32(len(p.ops)))
	p.mu.Unlock()
}

func (p *Pending) remove(a *awaiting) {
	p.mu.Lock()
	if i := slices.Index(p.ops, a); i >= 0 {
		p.ops = slices.Delete(p.ops, i, i+1)
	}
	p.n.Store(int32(len(p.ops)))
	p.mu.Unlock()
}

// offered is one message of an awaiting, on the plane of its receiver.
type offered struct {
	plane *link.Plane
	h     transport.Header
	done  bool
}

// offer offers the message h heads, of data, to the receiver at the
// other end of plane, for req.
func offer(rt *actors.Runtime, req *Request, plane *link.Plane, h transport.Header, data []byte) {
	if req.awaiting == nil {
		req.awaiting = &awaiting{rt: rt, req: req, left: 1}
		if req.Pending != nil {
			req.Pending.add(req.awaiting)
		}
	}
	plane.Offer(h, data, req.awaiting.add(plane, h))
}

// add counts an offer of the message h heads on plane, and returns
// what the plane calls once it is done.
func (a *awaiting) add(plane *link.Plane, h transport.Header) func(error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := len(a.offered)
	a.offered = append(a.offered, offered{plane: plane, h: h})
	a.left++
	return func(err error) { a.sent(i, err) }
}

// sent counts offer i done, with the error that kept it from going: the
// link to its receiver failed, or the offer was taken back.
func (a *awaiting) sent(i int, err error) {
	a.mu.Lock()
	o := &a.offered[i]
	o.done = true
	if err != nil {
		peer := o.plane.Peer()
		if !errors.Is(err, commerr.ErrTimeout) {
			err = fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, peer, err)
		}
		a.fail(err, []int{peer})
	}
	a.count()
}

// count counts one thing done, with a.mu held, which it lets go; once
// nothing is left, the Work ends.
func (a *awaiting) count() {
	a.left--
	if a.left > 0 {
		a.mu.Unlock()
		return
	}
	err, release := a.err, a.release
	a.finished = true
	a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
	}
	if a.req.Pending != nil {
		a.req.Pending.remove(a)
	}
	a.req.Completion.Finished(err)
	if release {
		a.req.release()
	}
}

// ended says the operation ended here, with err: the Work ends with it,
// or with the first offer's failure, once every offer went. An
// operation that failed takes back the offers not cleared yet; one that
// succeeded, with a timeout, takes back those still waiting after it.
func (a *awaiting) ended(err error) {
	a.mu.Lock()
	if err != nil {
		a.err = err
	}
	if err == nil && a.req.Timeout > 0 && a.left > 1 {
		a.timer = a.rt.NewTimerFunc(a.expire)
		a.timer.Arm(a.req.Timeout)
	}
	a.mu.Unlock()
	if err != nil {
		a.withdraw(err)
	}
	a.mu.Lock()
	a.count()
}

// holdRelease reports whether the Work has yet to end: the request is
// released once it does.
func (a *awaiting) holdRelease() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.release = !a.finished
	return a.release
}

// waiting returns the offers not done yet.
func (a *awaiting) waiting() []offered {
	a.mu.Lock()
	defer a.mu.Unlock()
	var w []offered
	for _, o := range a.offered {
		if !o.done {
			w = append(w, o)
		}
	}
	return w
}

// withdraw takes back every offer still waiting, with err.
func (a *awaiting) withdraw(err error) {
	for _, o := range a.waiting() {
		o.plane.Withdraw(o.h, err)
	}
}

// fail makes err, naming ranks, the Work's error, unless it has one.
// Called with a.mu held.
func (a *awaiting) fail(err error, ranks []int) {
	if a.err == nil {
		a.err = (&Fail{Err: err, Ranks: ranks}).errorOf(a.req)
	}
}

// cancel takes back the offers not cleared yet: the caller cancelled.
func (a *awaiting) cancel(err error) {
	a.mu.Lock()
	a.fail(err, nil)
	a.mu.Unlock()
	a.withdraw(err)
}

// expire takes back the offers whose receivers did not post within the
// operation's timeout, naming them.
func (a *awaiting) expire() {
	w := a.waiting()
	ranks := make([]int, len(w))
	for i, o := range w {
		ranks[i] = o.plane.Peer()
	}
	err := fmt.Errorf("%w after %v: ranks %v have not posted the receive", commerr.ErrTimeout, a.req.Timeout, ranks)
	a.mu.Lock()
	a.fail(err, ranks)
	a.mu.Unlock()
	a.withdraw(err)
}
