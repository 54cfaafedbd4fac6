package collective

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/actorstest"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
)

// These tests drive a Direct event by event, on one goroutine: each
// operation is rank 0's receive of 4 bytes from rank 1, so that it waits
// for a frame the test delivers (Direct.Deliver, as a plane does), on a
// clock the test advances. The owner is a fake that records what the
// Direct tells the rank.

// fakeOwner is the rank, as a Direct sees it.
type fakeOwner struct {
	mu      sync.Mutex
	held    int    // operations that hold the turn
	next    uint64 // the next collective's number
	told    []uint64
	adopted []*Adoption
}

func (o *fakeOwner) TellFailure(req *Request, _ []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.told = append(o.told, req.CollSeq)
}

func (o *fakeOwner) Withdraw() (int, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held, o.next
}

func (o *fakeOwner) HandOver(a *Adoption) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.adopted = append(o.adopted, a)
}

func (o *fakeOwner) Settle(peer int, err error) {}

// ended records how an operation ended.
type ended struct {
	started bool
	done    bool
	err     error
}

func (e *ended) Started()           { e.started = true }
func (e *ended) Finished(err error) { e.done, e.err = true, err }

type directHarness struct {
	t     *testing.T
	clock *actorstest.Clock
	owner *fakeOwner
	d     *Direct
	plane *link.Plane
	sched *algorithms.Schedule
	ops   map[uint64]*ended
}

func newDirectHarness(t *testing.T) *directHarness {
	clock := actorstest.NewClock(time.Unix(0, 0))
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler)).WithClock(clock)
	t.Cleanup(rt.Shutdown)
	b := algorithms.NewBuilder(0, 2)
	b.Recv(1, algorithms.Region{Buf: algorithms.Output, Len: 4})
	h := &directHarness{t: t, clock: clock, owner: &fakeOwner{}, plane: link.NewPlane(1), sched: b.Build("test"), ops: map[uint64]*ended{}}
	h.d = NewDirect(rt, h.owner)
	return h
}

// start gives the Direct operation seq, collective coll, whose timeout is
// timeout, as an issuer that took the turn does.
func (h *directHarness) start(seq, coll uint64, timeout time.Duration) {
	e := &ended{}
	h.ops[seq] = e
	req := &Request{Comm: "test", Rank: 0, Op: "recv", Seq: seq, Schedule: h.sched, DType: tensor.Uint8, Size: 2,
		Out: [][]byte{make([]byte, 4)}, CollSeq: coll, Sig: 7, Timeout: timeout, Completion: e}
	h.owner.mu.Lock()
	first := h.owner.held == 0
	h.owner.held++
	h.owner.next = coll + 1
	h.owner.mu.Unlock()
	h.d.Start(req, []*link.Plane{h.plane}, first, func() {
		h.owner.mu.Lock()
		h.owner.held--
		h.owner.mu.Unlock()
	})
}

// deliver hands the Direct rank 1's frame of collective coll.
func (h *directHarness) deliver(coll uint64) {
	p := transport.GetBuffer(4)
	copy(p, "abcd")
	h.d.Deliver(1, transport.Frame{Header: transport.Header{Kind: transport.Collective, Seq: coll, Sig: 7}, Payload: p})
}

// want checks which operations have ended, and with what.
func (h *directHarness) want(what string, done map[uint64]error) {
	h.t.Helper()
	for seq, e := range h.ops {
		err, ok := done[seq]
		switch {
		case ok && !e.done:
			h.t.Errorf("%s: operation %d has not ended", what, seq)
		case !ok && e.done:
			h.t.Errorf("%s: operation %d ended (%v)", what, seq, e.err)
		case ok && err == nil && e.err != nil:
			h.t.Errorf("%s: operation %d failed: %v", what, seq, e.err)
		case ok && err != nil && !errors.Is(e.err, err):
			h.t.Errorf("%s: operation %d ended with %v, want %v", what, seq, e.err, err)
		}
	}
}

// TestDirectRunsQueuedOperationsInOrder: operations started while one runs
// wait behind it, the next starting as the one before ends, and a frame of
// a later one that comes early is the plane's to keep, not theirs.
func TestDirectRunsQueuedOperationsInOrder(t *testing.T) {
	h := newDirectHarness(t)
	h.start(0, 0, 0)
	h.start(1, 1, 0)
	h.start(2, 2, 0)
	if h.d.Running() != 1 || !h.d.Holds(1) || !h.d.Holds(2) {
		t.Fatalf("running %d; want 0 running, 1 and 2 held", h.d.Running()-1)
	}
	if h.ops[1].started {
		t.Error("a queued operation started before the one ahead ended")
	}
	h.deliver(1) // early: released, as a plane hands on only the running one's
	h.want("an early frame", map[uint64]error{})
	h.deliver(0)
	h.want("the first frame", map[uint64]error{0: nil})
	if h.d.Running() != 2 || !h.ops[1].started {
		t.Fatal("the next did not start as the first ended")
	}
	h.deliver(1)
	h.deliver(2)
	h.want("all frames", map[uint64]error{0: nil, 1: nil, 2: nil})
	if h.d.Holds(2) || h.d.Running() != 0 || h.owner.held != 0 {
		t.Errorf("after the last: holds %v, running %d, %d holding the turn", h.d.Holds(2), h.d.Running(), h.owner.held)
	}
}

// TestDirectCancelsAQueuedOperation: a queued operation canceled ends at
// once, telling its peers; the one ahead runs on, and the one behind
// starts after it.
func TestDirectCancelsAQueuedOperation(t *testing.T) {
	h := newDirectHarness(t)
	h.start(0, 0, 0)
	h.start(1, 1, 0)
	h.start(2, 2, 0)
	canceled := errors.New("canceled")
	h.d.Cancel(1, canceled)
	h.want("the cancel", map[uint64]error{1: canceled})
	if !slices.Equal(h.owner.told, []uint64{1}) {
		t.Errorf("peers told of collectives %v, want [1]", h.owner.told)
	}
	h.deliver(0)
	h.deliver(2)
	h.want("the rest", map[uint64]error{0: nil, 1: canceled, 2: nil})
}

// TestDirectBreakEndsEveryOperation: a Break fails the running operation,
// the queued ones and any started after, with its error.
func TestDirectBreakEndsEveryOperation(t *testing.T) {
	h := newDirectHarness(t)
	h.start(0, 0, 0)
	h.start(1, 1, 0)
	h.d.Break(commerr.ErrAborted, nil)
	h.want("the break", map[uint64]error{0: commerr.ErrAborted, 1: commerr.ErrAborted})
	h.start(2, 2, 0)
	h.want("a start after it", map[uint64]error{0: commerr.ErrAborted, 1: commerr.ErrAborted, 2: commerr.ErrAborted})
}

// TestDirectReportFailsItsCollective: a peer's report about a queued
// collective ends that one, and only that one.
func TestDirectReportFailsItsCollective(t *testing.T) {
	h := newDirectHarness(t)
	h.start(0, 0, 0)
	h.start(1, 1, 0)
	h.d.Reported(1, commerr.ErrPeerFailed, []int{1}, nil)
	h.want("the report", map[uint64]error{1: commerr.ErrPeerFailed})
	h.deliver(0)
	h.want("the first frame", map[uint64]error{0: nil, 1: commerr.ErrPeerFailed})
}

// TestDirectHandsOverATimeoutWithTheQueue: an operation that times out
// goes to the rank with those queued behind it, once every one the owner
// counts has reached the Direct, and the next collective's number says
// where the rank numbers on.
func TestDirectHandsOverATimeoutWithTheQueue(t *testing.T) {
	h := newDirectHarness(t)
	h.start(0, 0, time.Second)
	h.start(1, 1, time.Second)
	h.owner.mu.Lock()
	h.owner.held++ // a third took the turn, and its Start has not come yet
	h.owner.next = 3
	h.owner.mu.Unlock()
	h.clock.Advance(time.Second)
	if len(h.owner.adopted) != 0 {
		t.Fatal("handed over before every operation that holds the turn came")
	}
	h.owner.mu.Lock()
	h.owner.held-- // start counts it again
	h.owner.mu.Unlock()
	h.start(2, 2, time.Second)
	if len(h.owner.adopted) != 1 {
		t.Fatalf("%d hand-overs, want 1", len(h.owner.adopted))
	}
	a := h.owner.adopted[0]
	var queued []uint64
	for _, r := range a.Queued() {
		queued = append(queued, r.Seq)
	}
	if a.Request().Seq != 0 || !slices.Equal(queued, []uint64{1, 2}) || a.Next() != 1 {
		t.Errorf("handed over %d with %v, next collective %d; want 0 with [1 2], next 1", a.Request().Seq, queued, a.Next())
	}
	if h.d.Holds(0) || h.d.Holds(2) {
		t.Error("the Direct still holds what it handed over")
	}
	h.want("the hand-over", map[uint64]error{})
}
