package rdma

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/gocomms/gocomms/rdma/verbs"
)

// An op becomes one work request, or for transfers longer than a chunk
// several, posted back to back while the op holds sendLock, so that the
// ops of one transport reach the peer's NIC one after another, as the
// tcp provider's requests do. Every request is signaled and holds a send
// slot (a credit) until its completion: the slot's index and a
// generation are its work request id, and its word of scratch takes an
// atomic's old value. An op's flight counts its requests; the op is done
// when the last has completed, which on a reliable connection means that
// every earlier request on the queue pair has too.
//
// Writes and atomics carry the fence flag, so that they wait for earlier
// reads and atomics to complete: a read may be executed again at the
// peer, when a response is lost, and without the fence could then see a
// later write. Reads need no fence: the peer's NIC executes the requests
// of a queue pair in order, so a read sees every earlier write. Together
// they keep the order the package promises: operations apply in the
// order they are posted.
//
// A notifying write first takes one of the peer's receives (notes),
// which the peer gives back once it has posted the receive again
// (verbs_keys.go: lend, credited).
//
// The poller, one goroutine per transport, polls the completion queue:
// it spins, yielding the processor, while requests are in flight, and
// otherwise waits for a kick from the next post or for verbsIdlePoll to
// pass, to count the peer's notifications and post their receives again.
// A failed completion breaks the transport; shutdown destroys the queue
// pair, so that the device lets go of every buffer, and fails what is
// left.

// verbsIdlePoll is how long an idle poller sleeps between polls: how late
// a notification from the peer may be counted when this transport has no
// request of its own in flight.
const verbsIdlePoll = time.Millisecond

// pollHold holds a poller back, for tests that need operations to stay
// in flight after the device has done them: while it is set, the poller
// stops before its next poll, says so on parked, and waits for resume to
// close.
type pollHold struct {
	parked chan struct{} // capacity 1
	resume chan struct{}
}

// verbsSlot is a send request in flight.
type verbsSlot struct {
	busy   bool
	gen    uint32
	flight int32
}

// verbsFlight is an op in flight: how many requests it has and how many
// have completed.
type verbsFlight struct {
	o           *op
	total, done int
	slot        int32 // the first request's slot, where an atomic's old value lands
	delivered   bool  // o's result has been sent
}

func (e *verbsEndpoint) do(ctx context.Context, o *op) error {
	r, err := e.resolve(ctx, o)
	if err != nil {
		return err
	}
	defer e.unref(r)
	if o.remote.Addr < r.base || o.remote.Len > r.end-r.base || o.remote.Addr-r.base > r.end-r.base-o.remote.Len {
		return statusBounds.err(o)
	}
	local := o.src
	switch o.kind {
	case opRead:
		local = o.dst
	case opFetchAdd, opCompareAndSwap:
		if !e.dev.atomics {
			return fmt.Errorf("%v: device %s does not perform atomics: %w", o, e.dev.name, ErrUnsupported)
		}
		local = nil
	}
	if len(local) == 0 && (o.kind == opRead || o.kind == opWrite && !o.notify) {
		return nil // nothing moves: the key and range are all there is to check
	}
	var lr *region
	if len(local) > 0 {
		if lr, err = e.dev.localRegion(o.mem); err != nil {
			if err == ErrUnregistered {
				return fmt.Errorf("%v: the local view's memory is not registered (deregistered meanwhile?): %w", o, err)
			}
			return fmt.Errorf("%v: register the local view's memory with device %s: %w", o, e.dev.name, err)
		}
		defer lr.refs.Add(-1)
	}

	notify := o.kind == opWrite && o.notify
	if notify { // a receive of the peer's for it
		if err := e.takeSlot(ctx, e.notes, false); err == errClosed {
			return e.ev.fail(errClosed)
		} else if err != nil {
			return fmt.Errorf("%v, waiting for the peer to post receives for notifications: %w", o, err)
		}
	}
	posted, err := e.postLocked(ctx, o, r, lr, local)
	if !posted {
		if notify {
			e.notes <- struct{}{}
		}
		return err
	}
	return result(ctx, o, await(ctx, o, e.abandon))
}

// abandon breaks the transport for o, whose context ended while it was on
// the wire: nothing says how far it got, and only destroying the queue
// pair makes the device let go of o's memory.
func (e *verbsEndpoint) abandon(ctx context.Context, o *op) {
	e.ev.fail(fmt.Errorf("%v was abandoned on the wire: %v", o, context.Cause(ctx)))
}

// postLocked takes sendLock and posts o's requests.
func (e *verbsEndpoint) postLocked(ctx context.Context, o *op, r *remoteKey, lr *region, local []byte) (posted bool, err error) {
	if err := e.takeSlot(ctx, e.sendLock, true); err == errClosed {
		return false, e.ev.fail(errClosed)
	} else if err != nil {
		return false, fmt.Errorf("%v, waiting to be sent: %w", o, err)
	}
	defer func() { <-e.sendLock }()
	return e.post(ctx, o, r, lr, local)
}

// post posts o's requests, holding sendLock. It reports whether any went
// out: then o's result comes on o.done, whatever happens; if none did,
// err says why.
func (e *verbsEndpoint) post(ctx context.Context, o *op, r *remoteKey, lr *region, local []byte) (posted bool, err error) {
	n := len(local)
	chunks := 1
	if o.kind == opWrite || o.kind == opRead {
		chunks = max(1, (n+e.chunk-1)/e.chunk)
	}
	fi := int32(-1)
	for i := range chunks {
		if err := e.takeSlot(ctx, e.credits, false); err != nil {
			switch {
			case fi < 0 && err == errClosed:
				return false, e.ev.fail(errClosed)
			case fi < 0:
				return false, fmt.Errorf("%v, waiting for room in the send queue: %w", o, err)
			case err != errClosed:
				e.abandon(ctx, o) // part of it is on the wire
			}
			return true, nil // shutdown fails the flight
		}
		e.mu.Lock()
		if e.isDown() {
			e.mu.Unlock()
			e.credits <- struct{}{}
			if fi < 0 {
				return false, e.ev.fail(errClosed)
			}
			return true, nil // shutdown fails the flight
		}
		slot := e.freeSlots[len(e.freeSlots)-1]
		e.freeSlots = e.freeSlots[:len(e.freeSlots)-1]
		if fi < 0 {
			fi = e.freeFlights[len(e.freeFlights)-1]
			e.freeFlights = e.freeFlights[:len(e.freeFlights)-1]
			e.flights[fi] = verbsFlight{o: o, total: chunks, slot: slot}
		}
		s := &e.slots[slot]
		s.busy, s.flight = true, fi
		s.gen++
		wrID := uint64(s.gen)<<32 | uint64(slot)
		e.inflight.Add(1)
		e.mu.Unlock()

		if err := e.postOne(o, wrID, slot, i, chunks, r, lr, local); err != nil {
			e.ev.fail(fmt.Errorf("post %v: %w", o, err)) // shutdown fails the flight
			return true, nil
		}
		select {
		case e.kick <- struct{}{}: // an idle poller polls at once
		default:
		}
	}
	return true, nil
}

// postOne posts request i of an op of chunks requests.
func (e *verbsEndpoint) postOne(o *op, wrID uint64, slot int32, i, chunks int, r *remoteKey, lr *region, local []byte) error {
	far := verbs.Remote{Addr: o.remote.Addr, RKey: r.rkey}
	switch o.kind {
	case opFetchAdd, opCompareAndSwap:
		word, err := e.scratchMR.SGE(8*int(slot), 8)
		if err != nil {
			return err
		}
		if o.kind == opFetchAdd {
			return e.qp.PostFetchAdd(wrID, word, far, o.a, verbsFlags(o.kind))
		}
		return e.qp.PostCompareSwap(wrID, word, far, o.a, o.b, verbsFlags(o.kind))
	}
	if len(local) == 0 { // a bare notification
		far = verbs.Remote{Addr: e.peerNotify.addr, RKey: e.peerNotify.rkey}
		return e.qp.PostWriteImm(wrID, verbs.SGE{}, far, 0, verbsFlags(o.kind))
	}
	off := i * e.chunk
	n := min(e.chunk, len(local)-off)
	sge, err := lr.mr.SGE(int(addrOf(local)-lr.base)+off, n)
	if err != nil {
		return err
	}
	far.Addr += uint64(off)
	switch {
	case o.kind == opRead:
		return e.qp.PostRead(wrID, sge, far, verbsFlags(o.kind))
	case o.notify && i == chunks-1:
		return e.qp.PostWriteImm(wrID, sge, far, 0, verbsFlags(o.kind))
	}
	return e.qp.PostWrite(wrID, sge, far, verbsFlags(o.kind))
}

// verbsFlags are the flags of an op's requests: every one is signaled,
// and those that change the peer's memory wait for earlier reads and
// atomics (see the top of this file).
func verbsFlags(k opKind) verbs.SendFlags {
	if k == opRead {
		return verbs.Signaled
	}
	return verbs.Signaled | verbs.Fence
}

// poll polls the completion queue until the endpoint shuts down.
func (e *verbsEndpoint) poll() {
	defer e.wg.Done()
	var got [32]verbs.Completion
	idle := time.NewTimer(verbsIdlePoll)
	defer idle.Stop()
	for {
		if h := e.hold.Load(); h != nil {
			select {
			case h.parked <- struct{}{}:
			default:
			}
			select {
			case <-h.resume:
			case <-e.stopped:
				return
			}
		}
		n, err := e.cq.Poll(got[:])
		if err != nil {
			if !e.isDown() {
				e.ev.fail(fmt.Errorf("poll the completion queue: %w", err))
			}
			return
		}
		for i := range n {
			if !e.complete(&got[i]) {
				return
			}
		}
		if n > 0 {
			continue
		}
		if e.isDown() {
			return
		}
		if e.inflight.Load() > 0 {
			runtime.Gosched()
			continue
		}
		idle.Reset(verbsIdlePoll)
		select {
		case <-e.kick:
		case <-idle.C:
		case <-e.stopped:
			return
		}
	}
}

// complete takes one completion. It returns false when the poller must
// stop: the transport is down.
func (e *verbsEndpoint) complete(c *verbs.Completion) bool {
	if c.WRID&recvTag != 0 {
		if err := c.Err(); err != nil {
			return e.broken(fmt.Errorf("a notification from the peer failed: %w", err))
		}
		if c.Opcode != verbs.OpRecvWriteImm || !c.HasImm {
			return e.broken(fmt.Errorf("the peer sent a %v, not a write with immediate data: %w", c.Opcode, errProtocol))
		}
		e.ev.notified()
		if err := e.qp.PostRecv(c.WRID, verbs.SGE{}); err != nil {
			return e.broken(fmt.Errorf("post a receive again: %w", err))
		}
		e.owed.Add(1)
		select {
		case e.owing <- struct{}{}:
		default:
		}
		return true
	}
	idx, gen := c.WRID&(1<<32-1), uint32(c.WRID>>32)
	e.mu.Lock()
	if idx >= verbsSendDepth || !e.slots[idx].busy || e.slots[idx].gen != gen {
		e.mu.Unlock()
		return e.broken(fmt.Errorf("a completion of work request %#x, which is not in flight", c.WRID))
	}
	s := &e.slots[idx]
	s.busy = false
	e.freeSlots = append(e.freeSlots, int32(idx))
	f := &e.flights[s.flight]
	f.done++
	var o *op
	failed := c.Status != verbs.StatusSuccess
	what := ""
	if failed && !f.delivered { // once delivered, o is its caller's again
		what = f.o.String()
	} else if !failed && f.done == f.total && !f.delivered {
		f.delivered, o = true, f.o
		if o.kind == opFetchAdd || o.kind == opCompareAndSwap {
			o.old = e.scratch[f.slot] // in the device's byte order: see docs/RDMA.md
		}
	}
	if f.done == f.total && f.delivered {
		f.o = nil
		e.freeFlights = append(e.freeFlights, s.flight)
	}
	e.mu.Unlock()
	e.inflight.Add(-1)
	e.credits <- struct{}{}
	if failed {
		return e.broken(fmt.Errorf("%s failed at the device: %w", what, c.Err()))
	}
	if o != nil {
		o.done <- nil
	}
	return true
}

// broken breaks the transport with cause unless it is down already, when
// failed completions are only the queue pair's requests being flushed.
// It returns false, for the poller to stop.
func (e *verbsEndpoint) broken(cause error) bool {
	if !e.isDown() {
		e.ev.fail(cause)
	}
	return false
}
