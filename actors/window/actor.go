package window

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// Config describes one rank's window.
type Config struct {
	Comm   string // communicator name, for errors
	CommID uint64
	ID     uint64 // the window's number in its communicator, the same on every rank
	Rank   int
	Size   int
	Memory []byte // the window, this rank's; its length is the same on every rank
	Slots  int    // signal slots
	// Revoked, if set, is told once, from the actor, why the window was
	// revoked: its owner's direct puts and gets, which bypass the actor,
	// fail with it too.
	Revoked func(error)
}

// Wait asks for the slot of this rank's window to compare with Value as
// Cmp says; with Consume, it waits for the next signal not yet counted
// (counting semantics: N signals satisfy N waits) instead. Done is called
// once, from the actor, with the slot's value then. Waits are numbered by
// the caller (ID) so that CancelWait can name one.
type Wait struct {
	ID      uint64
	Slot    int
	Cmp     backend.SignalCmp
	Value   uint64
	Consume bool
	Done    func(uint64, error)
}

// CancelWait ends a wait that has not been satisfied, with Err.
type CancelWait struct {
	ID  uint64
	Err error
}

// Read reads a signal slot of this rank's window in the actor's order,
// and with Reset sets it to zero in the same step, so that no signal
// falls between the two. Done is called with the value it had.
type Read struct {
	Slot  int
	Reset bool
	Done  func(uint64, error)
}

// Revoked tells the window that its communicator broke, aborted or was
// revoked: Err, which names the rank that failed, fails what waits and
// every later operation.
type Revoked struct{ Err error }

// NeedLink asks the window's parent for the link to Peer; the parent
// answers From with Link.
type NeedLink struct {
	Peer int
	From *actor.PID
}

// Link is the parent's answer to NeedLink: the link actor, or why there
// is none.
type Link struct {
	Peer  int
	PID   *actor.PID
	Plane *link.Plane // the link's, which counts what waits to be sent (Plane.Post)
	Err   error
}

// Producer returns the producer of a window actor.
func Producer(rt *actors.Runtime, cfg Config) actor.Producer {
	return func() actor.Actor { return newWindow(rt, cfg) }
}

// pending is an operation, or a chunk of one, waiting for its reply.
type pending struct {
	id       uint64
	op       *backend.WindowOp
	done     func(error) // the op's, or its chunk's
	result   []byte      // where the reply goes
	deadline time.Time   // zero: none
}

type windowActor struct {
	rt   *actors.Runtime
	cfg  Config
	tgt  target
	lock locks

	nextID  uint64
	pending []pending     // operations waiting for a reply, by increasing number
	links   map[int]*Link // by peer, as the parent named them
	// unlinked holds the frames for peers whose link the parent has not
	// named yet, in the order they go, and the peers in the order asked.
	unlinked map[int][]transport.Frame
	asked    []int
	applied  map[int]uint64 // the last operation applied, by origin
	due      map[int]int    // replies awaited, by peer: its link watches it meanwhile
	waits    []*Wait
	counted  []uint64 // per slot, the signals counting waits took
	timer    *actors.Timer
	sends    link.SendPool
	out      []byte // a reply's payload, built here before it is copied

	// failed, once set, fails every later operation: the window is
	// revoked.
	failed error
}

type checkTimeouts struct{}

func newWindow(rt *actors.Runtime, cfg Config) *windowActor {
	return &windowActor{
		rt: rt, cfg: cfg,
		tgt:      target{mem: cfg.Memory, slots: make([]uint64, cfg.Slots)},
		lock:     newLocks(),
		counted:  make([]uint64, cfg.Slots),
		links:    map[int]*Link{},
		unlinked: map[int][]transport.Frame{},
		applied:  map[int]uint64{},
		due:      map[int]int{},
	}
}

func (w *windowActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.timer = w.rt.NewTimer(ctx.Self(), checkTimeouts{})
	case *backend.WindowOp:
		w.issue(ctx, m)
	case *Wait:
		w.wait(m)
	case *CancelWait:
		w.cancelWait(m)
	case *Read:
		w.read(m)
	case *Link:
		w.linked(ctx, m)
	case *link.Delivered:
		w.delivered(ctx, m)
	case *link.Failed:
		w.fail(fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, m.Peer, m.Err))
	case *Revoked:
		w.fail(m.Err)
	case checkTimeouts:
		if w.timer.Fired() {
			w.expire(ctx)
		}
	case *actor.Stopping:
		w.timer.Stop()
		w.fail(backend.ErrWindowClosed)
	}
}

// issue starts op: at once on this rank's own window, else as frames to
// its peer, one per chunk.
func (w *windowActor) issue(ctx actor.Context, op *backend.WindowOp) {
	if w.failed != nil {
		transport.PutBuffer(op.Data)
		op.Done(w.failed)
		return
	}
	if op.Peer == w.cfg.Rank {
		w.applyLocal(ctx, op)
		return
	}
	n, dataLen := chunks(int(op.Len)), opDataLen(op)
	done := op.Done
	if n > 1 && replies(op.Code) {
		done = countdown(n, op.Done)
	}
	var lend *lender
	if op.Data != nil && (n > 1 || dataLen >= lendMin) {
		lend = &lender{staged: op.Data}
		lend.left.Store(int32(n))
		if !replies(op.Code) {
			lend.done = op.Done
		}
	}
	for i := range n {
		r, lo, hi := chunkOf(op, i, n)
		f := transport.Frame{Header: transport.Header{Comm: w.cfg.CommID, Kind: transport.Window, Seq: w.cfg.ID, Tag: uint32(op.Code)}}
		switch {
		case op.Data == nil:
			f.Payload = transport.GetBuffer(requestSize)
		case lend != nil:
			f.Payload, f.Sent = stagedFrame(op.Data, i, dataLen), lend.sent
		default:
			f.Payload = stagedFrame(op.Data, i, dataLen)
		}
		r.encode(f.Payload)
		w.nextID++
		f.Header.Sig = w.nextID
		w.send(ctx, op.Peer, f)
		if !replies(op.Code) {
			if lend == nil {
				done(nil)
			}
			continue
		}
		pd := pending{id: w.nextID, op: op, done: done}
		if op.Result != nil {
			pd.result = op.Result[lo:hi]
		}
		if op.Timeout > 0 {
			pd.deadline = w.rt.Clock.Now().Add(op.Timeout)
		}
		w.pending = append(w.pending, pd)
		w.awaitReplies(ctx, op.Peer, 1)
		if !pd.deadline.IsZero() {
			w.armTimer()
		}
	}
}

// awaitReplies counts delta more replies due from peer, and has its link
// watch the peer while any are: a peer that hangs is then found failed
// after the link's silence, as for a collective, not after the
// operation's timeout.
func (w *windowActor) awaitReplies(ctx actor.Context, peer, delta int) {
	before := w.due[peer]
	after := before + delta
	if after == 0 {
		delete(w.due, peer)
	} else {
		w.due[peer] = after
	}
	if l, ok := w.links[peer]; ok && (before == 0) != (after == 0) {
		ctx.Send(l.PID, &link.Expect{Key: w.key(), On: after > 0})
	}
}

// key is the routing key of the window's frames.
func (w *windowActor) key() link.Key { return link.Key{Kind: transport.Window, Seq: w.cfg.ID} }

// countdown returns a Done for each of n parts of an operation, which
// calls done once all have ended, with the first error.
func countdown(n int, done func(error)) func(error) {
	var first error
	return func(err error) {
		if first == nil {
			first = err
		}
		if n--; n == 0 {
			done(first)
		}
	}
}

// chunk returns the request of chunk i of op's n, and the bytes [lo, hi)
// of op's region it covers: the signal goes with the last chunk. An
// operation on a word or on nothing is one chunk.
func chunkOf(op *backend.WindowOp, i, n int) (r request, lo, hi int) {
	lo, hi = chunkBounds(i, int(op.Len))
	r = requestOf(op)
	r.Offset, r.Len = op.Offset+uint64(lo), uint64(hi-lo)
	if i < n-1 {
		r.SignalOp, r.Slot, r.Value = backend.SignalNone, 0, 0
	}
	return r, lo, hi
}

// send sends f to peer's link, or keeps it until the parent names the
// link, in order behind what is kept already.
func (w *windowActor) send(ctx actor.Context, peer int, f transport.Frame) {
	if l, ok := w.links[peer]; ok {
		l.Plane.Post(ctx, l.PID, w.sends.Get(f))
		return
	}
	if _, ok := w.unlinked[peer]; !ok {
		ctx.Send(ctx.Parent(), &NeedLink{Peer: peer, From: ctx.Self()})
		w.asked = append(w.asked, peer)
	}
	w.unlinked[peer] = append(w.unlinked[peer], f)
}

func (w *windowActor) linked(ctx actor.Context, m *Link) {
	frames := w.unlinked[m.Peer]
	delete(w.unlinked, m.Peer)
	w.asked = slices.DeleteFunc(w.asked, func(p int) bool { return p == m.Peer })
	if m.Err != nil {
		for _, f := range frames {
			transport.Release(f)
		}
		w.fail(m.Err) // the rank's: it names the rank that failed
		return
	}
	w.links[m.Peer] = m
	if w.due[m.Peer] > 0 {
		ctx.Send(m.PID, &link.Expect{Key: w.key(), On: true})
	}
	for _, f := range frames {
		m.Plane.Post(ctx, m.PID, w.sends.Get(f))
	}
}

// applyLocal applies op to this rank's own window, in the actor's order
// with the operations of other ranks, chunk by chunk as a peer would.
func (w *windowActor) applyLocal(ctx actor.Context, op *backend.WindowOp) {
	r := requestOf(op)
	if err := w.tgt.check(op.Code, &r); err != nil {
		transport.PutBuffer(op.Data)
		op.Done(commerr.Invalid("%v", err))
		return
	}
	switch op.Code {
	case backend.WindowLock:
		w.granted(ctx, w.lock.take(lockRequest{origin: w.cfg.Rank, exclusive: op.Value == 1, op: op}))
		return
	case backend.WindowUnlock:
		op.Done(nil)
		w.granted(ctx, w.lock.release(w.cfg.Rank))
		return
	}
	n, dataLen := chunks(int(op.Len)), opDataLen(op)
	for i := range n {
		c, lo, hi := chunkOf(op, i, n)
		var data []byte
		if op.Data != nil {
			data = stagedData(op.Data, i, dataLen)
		}
		w.out = w.tgt.apply(op.Code, &c, data, w.out[:0])
		if op.Result != nil {
			copy(op.Result[lo:hi], w.out)
		}
	}
	transport.PutBuffer(op.Data)
	op.Done(nil)
	if op.Signal != backend.SignalNone {
		w.signalled(op.Slot)
	}
}

// opDataLen is the length of op's data, less the room Stage left for
// headers.
func opDataLen(op *backend.WindowOp) int {
	if op.Data == nil {
		return 0
	}
	return len(op.Data) - requestSize*chunks(int(op.Len))
}

// request is the wire form of op.
func requestOf(op *backend.WindowOp) request {
	return request{
		Offset: op.Offset, Len: op.Len, DType: op.DType, Reduce: op.Reduce,
		SignalOp: op.Signal, Slot: uint32(op.Slot), Value: op.Value,
	}
}

func (w *windowActor) delivered(ctx actor.Context, m *link.Delivered) {
	h := m.Frame.Header
	if code := backend.WindowCode(h.Tag); code&replyBit != 0 {
		w.replied(ctx, m.Peer, h.Sig, m.Frame.Payload)
	} else {
		w.serve(ctx, m.Peer, code, h.Sig, m.Frame.Payload)
	}
	transport.Release(m.Frame)
	m.Recycle()
}

// serve applies an operation another rank sent, and answers it if it
// asks for an answer.
func (w *windowActor) serve(ctx actor.Context, origin int, code backend.WindowCode, id uint64, payload []byte) {
	if id <= w.applied[origin] {
		return // applied already: a retransmission
	}
	w.applied[origin] = id
	r, data, err := decodeRequest(code, payload)
	if err == nil {
		err = w.tgt.check(code, &r)
	}
	w.out = w.out[:0]
	switch {
	case err != nil:
	case code == backend.WindowLock:
		w.granted(ctx, w.lock.take(lockRequest{origin: origin, id: id, exclusive: r.Value == 1}))
		return // answered once granted
	case code == backend.WindowUnlock:
		defer w.granted(ctx, w.lock.release(origin))
	default: // a signal alone, or a flush, applies nothing but its signal

		w.out = w.tgt.apply(code, &r, data, w.out)
	}
	switch {
	case replies(code):
		w.reply(ctx, origin, code, id, err)
	case err != nil:
		w.rt.Logger.Warn("window: dropped an operation the target cannot apply", "window", w.cfg.ID, "origin", origin, "err", err)
	}
	if err == nil && r.SignalOp != backend.SignalNone {
		w.signalled(int(r.Slot))
	}
}

// reply answers operation id of origin: with what w.out holds, or err.
func (w *windowActor) reply(ctx actor.Context, origin int, code backend.WindowCode, id uint64, err error) {
	var p []byte
	if err != nil {
		msg := err.Error()
		p = transport.GetBuffer(1 + len(msg))
		p[0] = replyErr
		copy(p[1:], msg)
	} else {
		p = transport.GetBuffer(1 + len(w.out))
		p[0] = replyOK
		copy(p[1:], w.out)
	}
	w.send(ctx, origin, transport.Frame{
		Header:  transport.Header{Comm: w.cfg.CommID, Kind: transport.Window, Seq: w.cfg.ID, Tag: uint32(code | replyBit), Sig: id},
		Payload: p,
	})
}

// replied completes the operation, or the chunk, a reply answers.
func (w *windowActor) replied(ctx actor.Context, peer int, id uint64, payload []byte) {
	i, ok := slices.BinarySearchFunc(w.pending, id, func(p pending, id uint64) int { return cmp.Compare(p.id, id) })
	if !ok || w.pending[i].op.Peer != peer {
		return // it timed out already
	}
	pd := w.pending[i]
	w.pending = slices.Delete(w.pending, i, i+1)
	w.awaitReplies(ctx, peer, -1)
	data, err := decodeReply(payload)
	switch {
	case err != nil:
	case len(data) != len(pd.result):
		err = fmt.Errorf("window: %v reply of %d bytes, want %d", pd.op.Code, len(data), len(pd.result))
	default:
		copy(pd.result, data)
	}
	pd.done(err)
}

// wait registers m, or completes it at once if its slot already says so.
func (w *windowActor) wait(m *Wait) {
	if w.failed != nil {
		m.Done(0, w.failed)
		return
	}
	if m.Slot < 0 || m.Slot >= len(w.tgt.slots) {
		m.Done(0, commerr.Invalid("signal slot %d of %d", m.Slot, len(w.tgt.slots)))
		return
	}
	if w.satisfy(m) {
		return
	}
	w.waits = append(w.waits, m)
}

// satisfy completes m if its slot satisfies it, and reports whether it
// did.
func (w *windowActor) satisfy(m *Wait) bool {
	v := w.tgt.slots[m.Slot]
	if m.Consume {
		if v-w.counted[m.Slot] == 0 {
			return false
		}
		w.counted[m.Slot]++
	} else if !holds(m.Cmp, v, m.Value) {
		return false
	}
	m.Done(v, nil)
	return true
}

// signalled completes the waits that slot's new value satisfies, oldest
// first.
func (w *windowActor) signalled(slot int) {
	w.waits = slices.DeleteFunc(w.waits, func(m *Wait) bool { return m.Slot == slot && w.satisfy(m) })
}

func (w *windowActor) cancelWait(m *CancelWait) {
	for i, wt := range w.waits {
		if wt.ID == m.ID {
			w.waits = append(w.waits[:i], w.waits[i+1:]...)
			wt.Done(0, m.Err)
			return
		}
	}
}

func (w *windowActor) read(m *Read) {
	if m.Slot < 0 || m.Slot >= len(w.tgt.slots) {
		m.Done(0, commerr.Invalid("signal slot %d of %d", m.Slot, len(w.tgt.slots)))
		return
	}
	v := w.tgt.slots[m.Slot]
	if m.Reset {
		w.tgt.slots[m.Slot], w.counted[m.Slot] = 0, 0
	}
	m.Done(v, nil)
}

// fail revokes the window: what waits fails with err, and so does every
// later operation.
func (w *windowActor) fail(err error) {
	if w.failed == nil {
		w.failed = err
		if w.cfg.Revoked != nil && !errors.Is(err, backend.ErrWindowClosed) {
			w.cfg.Revoked(err)
		}
	}
	pending := w.pending
	w.pending = nil
	clear(w.due) // the links go on watching until the window's routes end
	for _, pd := range pending {
		pd.done(w.failed)
	}
	for _, peer := range w.asked {
		for _, f := range w.unlinked[peer] {
			transport.Release(f)
		}
		delete(w.unlinked, peer)
	}
	w.asked = nil
	waits := w.waits
	w.waits = nil
	for _, m := range waits {
		m.Done(0, w.failed)
	}
}

// armTimer arms the timer for the earliest deadline of what waits for a
// reply, or stops it if nothing does.
func (w *windowActor) armTimer() {
	var first time.Time
	for _, pd := range w.pending {
		if !pd.deadline.IsZero() && (first.IsZero() || pd.deadline.Before(first)) {
			first = pd.deadline
		}
	}
	if first.IsZero() {
		w.timer.Stop()
		return
	}
	w.timer.Arm(max(first.Sub(w.rt.Clock.Now()), 0))
}

// expire fails the operations whose deadline has passed, naming the rank
// each waited for.
func (w *windowActor) expire(ctx actor.Context) {
	now := w.rt.Clock.Now()
	var expired []pending
	w.pending = slices.DeleteFunc(w.pending, func(pd pending) bool {
		if !pd.deadline.IsZero() && !now.Before(pd.deadline) {
			expired = append(expired, pd)
			return true
		}
		return false
	})
	for _, pd := range expired {
		w.awaitReplies(ctx, pd.op.Peer, -1)
		pd.done(fmt.Errorf("%w: window %d of %q: %v on rank %d: no reply within %v", commerr.ErrTimeout, w.cfg.ID, w.cfg.Comm, pd.op.Code, pd.op.Peer, pd.op.Timeout))
	}
	w.armTimer()
}
