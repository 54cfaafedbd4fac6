package gocomms_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/reduce"
)

// loopbackName names a backend written as a user of the module would
// write one, seeing nothing of gocomms but its public API. Every rank of a
// communicator lives in this process, and the ranks meet in a hub, which
// computes each collective's results with plain loops once every rank has
// issued it. It is as simple as a backend can be, not fast: what it proves
// is that the front needs nothing more of a backend than the interface.
const loopbackName = "loopback"

// registerLoopback registers the backend once per test binary:
// registration is process-wide and cannot be undone.
var registerLoopback = sync.OnceValue(func() error {
	return gocomms.RegisterBackend(loopbackName, newLoopback)
})

// loopbackHubs are the hubs of the communicators being formed or running,
// by key (hub.key).
var loopbackHubs = struct {
	sync.Mutex
	m map[string]*hub
}{m: map[string]*hub{}}

// hub is where the ranks of one communicator meet.
type hub struct {
	// key is the communicator's name, and for a split's child also its
	// parent's key and its group: the groups of one split share a name.
	key   string
	size  int
	ready chan struct{} // closed once every rank has joined

	mu     sync.Mutex
	ranks  []*loopback
	joined int
	left   int                // ranks finalized
	slots  map[uint64]*slot   // collectives some rank has begun, by index
	mail   map[route][][]byte // messages sent and not yet received
}

// route identifies the messages that match in order: the k-th send from
// src to dst with tag matches dst's k-th receive from src with tag.
type route struct{ src, dst, tag int }

// slot gathers the ranks' operations of one collective.
type slot struct {
	ops     []*pending // by rank; nil until the rank begins it
	arrived int
	// err fails the ranks that arrive after one of them failed, naming
	// that rank (culprit).
	err     error
	culprit int
}

// loopback is one rank's backend.
type loopback struct {
	h    *hub
	name string
	rank int

	// Guarded by h.mu.
	queue []*pending // issued, not yet finished: queue[0] runs, the rest wait for it
	// collectives counts the collectives begun, which numbers their slots:
	// sequence numbers count point-to-point operations too, which ranks
	// need not issue alike.
	collectives uint64
	err         error // Abort's: every later operation fails with it

	unfinished sync.WaitGroup // operations issued and not finished, which Finalize waits for
}

// pending is an operation in a rank's queue.
type pending struct {
	b     *loopback
	op    *gocomms.Op
	done  gocomms.Completion
	timer *time.Timer
	state opState
	slot  *slot    // a collective's, once begun
	got   [][]byte // a point-to-point operation's received messages, by P2P index; nil until matched
	err   error    // an *OpError once failed
}

type opState int

const (
	opWaiting opState = iota // behind the rank's earlier operations
	opBegun                  // the rank's current one, waiting for peers or messages
	opClaimed                // running or failed: the goroutine that claimed it finishes it
)

func newLoopback(ctx context.Context, cfg *gocomms.Config) (gocomms.Backend, error) {
	if !cfg.Device.IsCPU() {
		return nil, fmt.Errorf("%w: loopback runs on cpu, not %v", gocomms.ErrInvalidArgument, cfg.Device)
	}
	if cfg.Dynamic {
		return nil, fmt.Errorf("%w: loopback cannot reconfigure", gocomms.ErrInvalidArgument)
	}
	return joinHub(ctx, cfg.Name, cfg)
}

// joinHub adds this rank to the hub at key, and returns once every rank
// has joined.
func joinHub(ctx context.Context, key string, cfg *gocomms.Config) (*loopback, error) {
	loopbackHubs.Lock()
	h := loopbackHubs.m[key]
	if h == nil {
		h = &hub{key: key, size: cfg.Size, ready: make(chan struct{}), ranks: make([]*loopback, cfg.Size),
			slots: map[uint64]*slot{}, mail: map[route][][]byte{}}
		loopbackHubs.m[key] = h
	}
	h.mu.Lock()
	if h.size != cfg.Size || h.ranks[cfg.Rank] != nil {
		h.mu.Unlock()
		loopbackHubs.Unlock()
		return nil, fmt.Errorf("%w: rank %d of %d cannot join communicator %q of %d", gocomms.ErrInvalidArgument, cfg.Rank, cfg.Size, cfg.Name, h.size)
	}
	b := &loopback{h: h, name: cfg.Name, rank: cfg.Rank}
	h.ranks[cfg.Rank] = b
	if h.joined++; h.joined == h.size {
		close(h.ready)
	}
	h.mu.Unlock()
	loopbackHubs.Unlock()

	select {
	case <-h.ready:
		return b, nil
	case <-ctx.Done():
	}
	loopbackHubs.Lock()
	defer loopbackHubs.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.ready: // everyone came after all, and counts on this rank
		return b, nil
	default:
	}
	h.ranks[cfg.Rank] = nil
	if h.joined--; h.joined == 0 {
		delete(loopbackHubs.m, key)
	}
	return nil, context.Cause(ctx)
}

func (b *loopback) Name() string { return loopbackName }

// Issue queues op behind the rank's earlier operations, which run one at a
// time, in order.
func (b *loopback) Issue(op *gocomms.Op, done gocomms.Completion) func(error) {
	h := b.h
	p := &pending{b: b, op: op, done: done}
	b.unfinished.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	b.queue = append(b.queue, p)
	p.timer = time.AfterFunc(op.Timeout, func() { h.fail(p, fmt.Errorf("%w after %v", gocomms.ErrTimeout, op.Timeout)) })
	switch {
	case b.err != nil:
		h.claim(p, b.err, nil)
	case op.Schedule != nil:
		h.claim(p, fmt.Errorf("%w: loopback runs no custom schedules", gocomms.ErrInvalidArgument), nil)
	case len(b.queue) == 1:
		h.begin(p)
	}
	return func(err error) { h.fail(p, err) }
}

// Split joins the child's hub, keyed by the parent's and the group, which
// tell apart the groups of one split.
func (b *loopback) Split(ctx context.Context, group []int, cfg *gocomms.Config, _ gocomms.Exchange) (gocomms.Backend, error) {
	if group == nil {
		return nil, nil
	}
	return joinHub(ctx, fmt.Sprintf("%s/%s%v", b.h.key, cfg.Name, group), cfg)
}

// Abort fails this rank's operations with err, and those of its peers that
// wait for it with ErrPeerFailed.
func (b *loopback) Abort(err error) {
	h := b.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if b.err != nil {
		return
	}
	b.err = err
	for _, p := range b.queue {
		if p.state != opClaimed {
			h.claim(p, err, nil)
		}
	}
	// A collective still gathering waits for this rank, or has its failed
	// operation.
	for _, s := range h.slots {
		if s.err == nil {
			h.breakSlot(s, b.rank, err)
		}
	}
	for _, q := range h.ranks {
		h.match(q) // fails receives from this rank that have no message
	}
}

// Finalize waits for the rank's operations to finish.
func (b *loopback) Finalize(ctx context.Context) error {
	idle := make(chan struct{})
	go func() {
		b.unfinished.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	loopbackHubs.Lock()
	defer loopbackHubs.Unlock()
	h := b.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.left++; h.left == h.size && loopbackHubs.m[h.key] == h {
		delete(loopbackHubs.m, h.key)
	}
	return nil
}

func (b *loopback) opError(op *gocomms.Op, err error, ranks []int) error {
	return &gocomms.OpError{Comm: b.name, Op: string(op.Name), Seq: op.Seq, Rank: b.rank, Ranks: ranks, Err: err}
}

func peerFailed(rank int, cause error) error {
	return fmt.Errorf("%w: rank %d: %v", gocomms.ErrPeerFailed, rank, cause)
}

// begin starts p, the head of its rank's queue. h.mu is held.
func (h *hub) begin(p *pending) {
	p.state = opBegun
	b := p.b
	if p.op.Kind == 0 {
		p.got = make([][]byte, len(p.op.P2P))
		for _, m := range p.op.P2P {
			if m.Send { // eagerly: a send is done once its data has left
				r := route{b.rank, m.Peer, m.Tag}
				// Never nil, even empty: nil marks a receive not yet matched.
				h.mail[r] = append(h.mail[r], append([]byte{}, m.Tensor.Bytes()...))
			}
		}
		for _, m := range p.op.P2P {
			if m.Send {
				h.match(h.ranks[m.Peer])
			}
		}
		h.match(b)
		return
	}
	k := b.collectives
	b.collectives++
	s := h.slots[k]
	if s == nil {
		s = &slot{ops: make([]*pending, h.size)}
		h.slots[k] = s
	}
	s.ops[b.rank], p.slot = p, s
	s.arrived++
	if s.err != nil {
		h.claim(p, s.err, []int{s.culprit})
		return
	}
	for q, o := range h.ranks {
		if o.err != nil {
			h.breakSlot(s, q, o.err)
			return
		}
	}
	if s.arrived == h.size {
		delete(h.slots, k)
		for _, o := range s.ops {
			o.state = opClaimed
			o.timer.Stop()
		}
		go h.run(s.ops)
	}
}

// match hands b's current operation, if it is point-to-point, the
// messages that reached it, and runs it once it has them all. h.mu is
// held.
func (h *hub) match(b *loopback) {
	if len(b.queue) == 0 {
		return
	}
	p := b.queue[0]
	if p.state != opBegun || p.op.Kind != 0 {
		return
	}
	complete := true
	for i, m := range p.op.P2P {
		if m.Send || p.got[i] != nil {
			continue
		}
		r := route{m.Peer, b.rank, m.Tag}
		if q := h.mail[r]; len(q) > 0 {
			p.got[i], h.mail[r] = q[0], q[1:]
			if len(h.mail[r]) == 0 {
				delete(h.mail, r)
			}
			continue
		}
		if err := h.ranks[m.Peer].err; err != nil {
			h.claim(p, peerFailed(m.Peer, err), []int{m.Peer})
			return
		}
		complete = false
	}
	if complete {
		p.state = opClaimed
		p.timer.Stop()
		go h.run([]*pending{p})
	}
}

// fail ends p with cause, if nothing has claimed it yet, and the
// collective it is part of on every rank.
func (h *hub) fail(p *pending, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.state == opClaimed {
		return
	}
	h.claim(p, cause, h.awaited(p))
	if p.slot != nil {
		h.breakSlot(p.slot, p.b.rank, cause)
	}
}

// breakSlot fails a collective that rank failed with cause on every rank
// that has begun it, and on those that will. h.mu is held.
func (h *hub) breakSlot(s *slot, rank int, cause error) {
	s.err, s.culprit = peerFailed(rank, cause), rank
	for _, o := range s.ops {
		if o != nil && o.state != opClaimed {
			h.claim(o, s.err, []int{rank})
		}
	}
}

// awaited returns the ranks p waits for: those that have not begun its
// collective, or whose messages it has not received. h.mu is held.
func (h *hub) awaited(p *pending) []int {
	var ranks []int
	if s := p.slot; s != nil {
		for q, o := range s.ops {
			if o == nil {
				ranks = append(ranks, q)
			}
		}
	}
	for i, m := range p.op.P2P {
		if p.state == opBegun && !m.Send && p.got[i] == nil {
			ranks = append(ranks, m.Peer)
		}
	}
	slices.Sort(ranks)
	return slices.Compact(ranks)
}

// claim fails p with cause, naming ranks. h.mu is held.
func (h *hub) claim(p *pending, cause error, ranks []int) {
	p.state = opClaimed
	p.timer.Stop()
	p.err = p.b.opError(p.op, cause, ranks)
	go h.finish(p)
}

// run moves the data of claimed operations, every rank's of one
// collective or one point-to-point operation, and finishes them.
func (h *hub) run(ops []*pending) {
	for _, p := range ops {
		p.done.Started()
	}
	var err error
	if ops[0].op.Kind == 0 {
		err = receive(ops[0])
	} else {
		err = collective(ops)
	}
	for _, p := range ops {
		if err != nil {
			p.err = p.b.opError(p.op, err, nil)
		}
		h.finish(p)
	}
}

// finish reports a claimed operation's end, then lets the rank's next
// operation begin.
func (h *hub) finish(p *pending) {
	p.done.Finished(p.err)
	h.mu.Lock()
	b := p.b
	i := slices.Index(b.queue, p)
	b.queue = slices.Delete(b.queue, i, i+1)
	if i == 0 && len(b.queue) > 0 && b.queue[0].state == opWaiting {
		h.begin(b.queue[0])
	}
	h.mu.Unlock()
	b.unfinished.Done()
}

// receive copies a point-to-point operation's messages into its tensors.
func receive(p *pending) error {
	for i, m := range p.op.P2P {
		if m.Send {
			continue
		}
		dst := m.Tensor.Bytes()
		if len(dst) != len(p.got[i]) {
			return fmt.Errorf("%w: message %d from rank %d holds %d bytes, the tensor %d", gocomms.ErrInvalidArgument, i, m.Peer, len(p.got[i]), len(dst))
		}
		copy(dst, p.got[i])
	}
	return nil
}

// collective computes every rank's outputs of one collective straight from
// its definition, ops holding each rank's operation.
func collective(ops []*pending) error {
	first := ops[0].op
	for q, p := range ops {
		if o := p.op; o.Name != first.Name || o.DType != first.DType || o.Root != first.Root || o.Reduce != first.Reduce {
			return fmt.Errorf("%w: rank %d issued %s of %v (root %d, %v), rank 0 %s of %v (root %d, %v)", gocomms.ErrInvalidArgument,
				q, o.Name, o.DType, o.Root, o.Reduce, first.Name, first.DType, first.Root, first.Reduce)
		}
	}
	n, root := len(ops), first.Root
	in := func(q, i int) []byte { return ops[q].op.Inputs[i].Bytes() }
	var out staged
	switch first.Kind {
	case algorithms.AllReduce:
		sum := out.reduce(first, n, func(q int) []byte { return in(q, 0) })
		for _, p := range ops {
			out.put(p, 0, sum)
		}
	case algorithms.Reduce:
		out.put(ops[root], 0, out.reduce(first, n, func(q int) []byte { return in(q, 0) }))
	case algorithms.Broadcast:
		src := ops[root].op.Outputs[0].Bytes()
		for _, p := range ops {
			out.put(p, 0, src)
		}
	case algorithms.AllGather:
		for _, p := range ops {
			for r := range n {
				out.put(p, r, in(r, 0))
			}
		}
	case algorithms.ReduceScatter:
		for q, p := range ops {
			out.put(p, 0, out.reduce(first, n, func(r int) []byte { return in(r, q) }))
		}
	case algorithms.AllToAll:
		for q, p := range ops {
			for r := range n {
				out.put(p, r, in(r, q))
			}
		}
	case algorithms.Gather:
		for r := range n {
			out.put(ops[root], r, in(r, 0))
		}
	case algorithms.Scatter:
		for q, p := range ops {
			out.put(p, 0, in(root, q))
		}
	case algorithms.Barrier:
	default:
		return fmt.Errorf("%w: loopback knows no collective %v", gocomms.ErrInvalidArgument, first.Kind)
	}
	return out.write()
}

// staged holds a collective's results until all are computed: an output
// may be another rank's input, or this rank's (in place).
type staged struct {
	writes []stagedWrite
	err    error
}

type stagedWrite struct{ dst, src []byte }

// put stages a copy of src for output block i of p.
func (s *staged) put(p *pending, i int, src []byte) {
	if s.err != nil {
		return
	}
	dst := p.op.Outputs[i].Bytes()
	if len(dst) != len(src) {
		s.err = fmt.Errorf("%w: rank %d's output block %d holds %d bytes, its data %d", gocomms.ErrInvalidArgument, p.b.rank, i, len(dst), len(src))
		return
	}
	s.writes = append(s.writes, stagedWrite{dst, bytes.Clone(src)})
}

// reduce combines block(q) of every rank q, in rank order, with op's
// reduction.
func (s *staged) reduce(op *gocomms.Op, n int, block func(q int) []byte) []byte {
	if s.err != nil {
		return nil
	}
	acc := bytes.Clone(block(0))
	for q := 1; q < n; q++ {
		b := block(q)
		if len(b) != len(acc) {
			s.err = fmt.Errorf("%w: rank %d reduces %d bytes, rank 0 %d", gocomms.ErrInvalidArgument, q, len(b), len(acc))
			return nil
		}
		reduce.Combine(op.Reduce, op.DType, acc, acc, b)
	}
	reduce.Finish(op.Reduce, op.DType, acc, n)
	return acc
}

func (s *staged) write() error {
	if s.err != nil {
		return s.err
	}
	for _, w := range s.writes {
		copy(w.dst, w.src)
	}
	return nil
}

// runLoopback runs fn on each of n ranks of a loopback communicator named
// for the test, in its own goroutine, as RunLocal does over the native
// backend: a rank whose fn fails aborts the others, and every rank
// finalizes once all have returned (unless fn finalized it itself).
func runLoopback(t *testing.T, n int, fn func(ctx context.Context, c *gocomms.Comm) error, opts ...gocomms.Option) {
	t.Helper()
	if err := registerLoopback(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	comms := make([]*gocomms.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			all := append([]gocomms.Option{gocomms.WithRank(r), gocomms.WithSize(n), gocomms.WithTimeout(30 * time.Second)}, opts...)
			comms[r], errs[r] = gocomms.NewComm(ctx, loopbackName, gocomms.CPU, t.Name(), all...)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var abortOthers sync.Once
	for r, c := range comms {
		wg.Go(func() {
			err := fn(ctx, c)
			if err == nil {
				return
			}
			errs[r] = fmt.Errorf("rank %d: %w", r, err)
			abortOthers.Do(func() {
				for _, o := range comms {
					if o != c {
						o.Abort(fmt.Errorf("rank %d failed", r))
					}
				}
			})
		})
	}
	wg.Wait()
	for r, c := range comms {
		err := c.Finalize(ctx)
		if err != nil && errs[r] == nil && !c.IsAborted() && !errors.Is(err, gocomms.ErrFinalized) {
			errs[r] = fmt.Errorf("rank %d: finalize: %w", r, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
