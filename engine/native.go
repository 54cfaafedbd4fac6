package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/actors/rank"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/osyield"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/resume"
)

// Name is the name the engine registers under.
const Name = "native"

// EagerMax is the largest point-to-point message the engine sends at
// once; a larger one waits at its sender until its receive is posted.
const EagerMax = collective.RendezvousMin

// LinkStats returns how many times this process's links made a new
// connection after one broke, and how many frames they sent again on it,
// for operators (metrics.LinkStats).
func LinkStats() (reconnects, retransmitted uint64) { return resume.Stats() }

// Hints the engine reads, per communicator or per operation.
const (
	// HintAlgorithm picks an algorithm by name, one of the communicator's
	// registry's.
	HintAlgorithm = "algorithm"
	// HintChunkBytes bounds the message size a large tensor is pipelined in.
	HintChunkBytes = "chunk_bytes"
)

// native is the engine's Backend: a rank actor over link actors.
type native struct {
	cfg    *backend.Config
	commID uint64
	mesh   *mesh
	pid    *actor.PID // nil until a dynamic communicator is reconfigured
	plans  collective.Plans
	// lease is where the rank lends its turn; direct runs the collectives
	// issued meanwhile, and giveBack ends their hold on the turn.
	lease      *rank.Lease
	direct     *collective.Direct
	giveBack   func()
	yieldAfter int // empty polls before a waiting caller yields its thread
	// mem is the registered memory: Alloc's, and the peers' mapped.
	mem memory
	// pending holds the operations that ended with large messages still
	// on offer, for Cancel.
	pending collective.Pending
	// finalized is set once Finalize stopped the rank, and with it every
	// window's actor.
	finalized atomic.Bool

	endpointMu sync.Mutex
	endpoint   transport.Listener // where the next Reconfigure's communicator listens
}

// New creates this rank of the communicator cfg describes, once every
// rank has joined, as the root package's backend factory. On the meta
// device, operations move the sizes of their tensors and no data. Without a
// network or a store in cfg, it takes the process's, as the launcher's
// environment describes them (environment.go), and sets them in cfg.
func New(ctx context.Context, cfg *backend.Config) (backend.Backend, error) {
	if _, ok := cfg.Runtime.(*actors.Runtime); !ok {
		return nil, commerr.Invalid("the native backend runs on an actor runtime (*actors.Runtime), not %T", cfg.Runtime)
	}
	if cfg.Device.Type == tensor.DeviceCUDA {
		return newCUDA(ctx, cfg)
	}
	if cfg.Device != tensor.CPU && cfg.Device != tensor.Meta {
		return nil, commerr.Invalid("the native backend runs on cpu, cuda and meta, not %v", cfg.Device)
	}
	if cfg.Network == nil {
		nw, err := processNetwork()
		if err != nil {
			return nil, err
		}
		cfg.Network = nw
	}
	if _, fabric := cfg.Network.(transport.Fabric); cfg.ReleaseLinks && !fabric {
		// A process network's stream of a communicator does not open
		// again once closed: a released link could not be made anew.
		return nil, commerr.Invalid("link release needs a network that connects a pair again after a release (a transport.Fabric, as the simulator's)")
	}
	if cfg.Dynamic {
		return &native{cfg: cfg}, nil
	}
	if _, fabric := cfg.Network.(transport.Fabric); cfg.Store == nil && cfg.Size > 1 && !fabric {
		st, err := envStore(ctx, cfg.Rank, cfg.Timeout)
		if err != nil {
			return nil, err
		}
		cfg.Store = st
	}
	m, err := rendezvous(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return startNative(cfg, m), nil
}

func startNative(cfg *backend.Config, m *mesh) *native {
	rt := runtimeOf(cfg).WithLogger(cfg.Logger) // cfg.Logger names the communicator and rank
	n := &native{cfg: cfg, commID: m.id, mesh: m, yieldAfter: yieldsAfter(cfg)}
	// A phantom collective moves no bytes to move off the actors, and one
	// off them would hold planes whose links the rank may release.
	if cfg.Device != tensor.Meta && !cfg.ReleaseLinks {
		n.lease = rank.NewLease(rt)
		n.direct, n.giveBack = n.lease.Direct(), n.lease.Release
	}
	n.pid = rank.Spawn(rt, rank.Config{
		Comm: cfg.Name, CommID: m.id, Rank: cfg.Rank, Size: cfg.Size, Connect: m.conn, PeerFailed: m.peerFailed,
		Heartbeat: cfg.Heartbeat, Silence: cfg.Silence, Lease: n.lease, ReleaseLinks: cfg.ReleaseLinks,
	})
	m.watch(func(peer int) { rt.System().Root.Send(n.pid, &rank.Connected{Peer: peer}) })
	return n
}

func (n *native) Name() string { return Name }

func (n *native) Issue(op *backend.Op, done backend.Completion) func(error) {
	if !n.IssueIn(op, done, n.NewRoom()) {
		return nil
	}
	seq := op.Seq
	return func(err error) { n.Cancel(seq, err) }
}

// NewRoom returns an empty request.
func (n *native) NewRoom() backend.Room { return &room{} }

// IssueIn builds op's request in r, a room NewRoom made, and submits it to
// the rank actor: it reports whether op was submitted, else it has ended.
func (n *native) IssueIn(op *backend.Op, done backend.Completion, r backend.Room) bool {
	o := r.(*room)
	req, err := n.request(op, done, o)
	if err != nil {
		done.Finished(&commerr.OpError{Comm: n.cfg.Name, Op: string(op.Name), Seq: op.Seq, Rank: n.cfg.Rank, Err: err})
		return false
	}
	if n.runDirect(req, o) {
		return true
	}
	if n.lease != nil {
		n.lease.Submitting()
		n.lease.HandBack()
	}
	o.submit.Req = req
	n.tell(n.pid, &o.submit)
	return true
}

// runDirect runs req off the actors if the rank lends its turn and every
// peer's connection carries direct frames: it reports whether it did. It
// runs after the operations that hold the turn already.
func (n *native) runDirect(req *collective.Request, o *room) bool {
	if req.Phantom || n.lease == nil {
		return false
	}
	var ok bool
	if o.planes, ok = n.lease.Planes(req.Peers(), o.planes[:0]); !ok {
		return false
	}
	first, ok := n.lease.Acquire(req)
	if !ok {
		return false
	}
	// Once started, req may end on another goroutine, whose frame
	// completes it, and its room be reused before Start returns.
	seq := req.Seq
	n.direct.Start(req, o.planes, first, n.giveBack)
	if !first {
		n.progress(seq)
	}
	return true
}

// progress polls once the connections of the collective that runs off
// the actors ahead of operation seq, which an async call queued behind
// it: the issuing goroutine moves the queue on, as Open MPI's calls
// progress its requests, rather than leave it to the transports'
// goroutines, which would compete with it for the cores (2 processes
// over shared memory, async all-reduces: 3-7% faster at 8 B and 64 KiB,
// docs/DATA-PLANE.md).
func (n *native) progress(seq uint64) {
	var room [8]transport.Poller
	pollers, _ := n.direct.Pollers(seq, room[:0])
	for _, p := range pollers {
		p.Polling(true)
		p.Poll()
		p.Paused()
	}
	if len(pollers) > 0 {
		n.lease.Paused()
	}
}

// Alloc returns a zeroed tensor in memory registered with the
// communicator: in a memory file the ranks of this host map, where the
// network shares memory, so that a collective over shared memory reads
// it in place; from the heap elsewhere.
func (n *native) Alloc(dt tensor.DType, shape []int) (*tensor.Tensor, error) {
	if n.cfg.Device == tensor.Meta {
		return nil, commerr.Invalid("the meta device has no memory")
	}
	meta, err := tensor.NewMeta(dt, shape...)
	if err != nil {
		return nil, commerr.Invalid("%v", err)
	}
	mem, err := n.mem.alloc(meta.NBytes(), n.sharesMemory())
	if err != nil {
		return nil, err
	}
	return tensor.FromBytes(dt, mem, shape...)
}

// Free lets go of a tensor Alloc returned.
func (n *native) Free(t *tensor.Tensor) error { return n.mem.free(t.Bytes()) }

// RegisteredSends counts the sends that went as descriptors of
// registered memory.
func (n *native) RegisteredSends() uint64 { return n.mem.described.Load() }

// DirectOps counts the operations that ran off the actors.
func (n *native) DirectOps() uint64 {
	if n.direct == nil {
		return 0
	}
	return n.direct.Ran()
}

// Spin waits on the caller's goroutine for operation seq while it is off
// the actors (running, or queued behind others that run first), until
// spinFor passes without a frame, polling the connections the running
// operation's frames come on where they can be polled
// (transport.Poller): its end then needs no wake-up, and where the
// caller polls, its frames no transport goroutine. The operations before
// it end, and the next start, on this goroutine. Once it ended, it waits
// for its large messages still on offer the same way: their receivers'
// clearances come on the connections it polls, and the data goes from
// there.
func (n *native) Spin(seq uint64) {
	if n.direct == nil {
		return
	}
	switch {
	case n.direct.Holds(seq):
		if !n.spin(seq, false) {
			n.direct.Park(seq) // it parks: its timeout starts now
			return
		}
	case !n.pending.Holds(seq):
		// Its start may still wait among the events another goroutine
		// handles: its timeout, which only a Park arms, must start all
		// the same. A Park for an operation not run here does nothing.
		n.direct.Park(seq)
		return
	}
	if n.pending.Holds(seq) {
		n.spin(seq, true)
	}
}

// spin polls, for operation seq, the connections the Direct that holds
// it names, or with offers those of its messages still on offer, until
// it is done with them, and reports whether it is; it gives up once
// spinFor passes without a frame, or at once where the host's ranks
// outnumber its cores.
func (n *native) spin(seq uint64, offers bool) bool {
	var room, next [8]transport.Poller
	pollers, running := n.pollers(seq, offers, room[:0])
	if n.yieldAfter == 0 && slices.ContainsFunc(pollers, func(p transport.Poller) bool { return transport.PolledBySyscall(p) }) {
		// More ranks than cores: spinning on a socket takes the cores its
		// peers' kernels need (4 processes on 2 cores over TCP, 8 B:
		// 238-254 µs spinning, 195-207 parked, docs/DATA-PLANE.md).
		return false
	}
	for _, p := range pollers {
		p.Polling(true)
	}
	var deadline time.Time // read once the operation outlasts a few polls
	idle := 0              // polls in a row that took nothing
	for i := 1; n.holds(seq, offers); i++ {
		if r := n.running(offers); r != running && r != 0 {
			// The next operation runs: poll its connections. (Between two,
			// none runs: keep polling the last one's, the likely next.)
			var now []transport.Poller
			now, running = n.pollers(seq, offers, next[:0])
			if !slices.Equal(now, pollers) {
				for _, p := range pollers {
					p.Paused()
				}
				for _, p := range now {
					p.Polling(true)
				}
				pollers = append(room[:0], now...)
			}
		}
		moved := false
		for _, p := range pollers {
			moved = p.Poll() || moved
		}
		if moved {
			deadline, idle = time.Time{}, 0 // a frame came: the spin counts from now
		}
		if i%64 == 0 {
			now := time.Now() // nondeterministic: a blocking caller's wait, never the simulator's
			if deadline.IsZero() {
				deadline = now.Add(spinFor)
			} else if now.After(deadline) {
				break
			}
		}
		if idle++; idle > n.yieldAfter && len(pollers) > 0 {
			// The peer is slow to answer: it may need this core (more
			// ranks than cores), so let other processes run.
			osyield.Yield()
		} else if !moved {
			runtime.Gosched()
		}
	}
	done := !n.holds(seq, offers)
	for _, p := range pollers {
		if done {
			p.Paused() // the caller's next operation polls again soon
		} else {
			p.Polling(false) // it parks: the transport reads from now on
		}
	}
	if done && len(pollers) > 0 {
		n.lease.Paused()
	}
	return done
}

// holds, pollers and running ask the Direct, or with offers the rank's
// Pending, about operation seq. They are plain calls, not an
// interface's, so that the pollers' arrays stay on the caller's stack.
func (n *native) holds(seq uint64, offers bool) bool {
	if offers {
		return n.pending.Holds(seq)
	}
	return n.direct.Holds(seq)
}

func (n *native) pollers(seq uint64, offers bool, dst []transport.Poller) ([]transport.Poller, uint64) {
	if offers {
		return n.pending.Pollers(seq, dst)
	}
	return n.direct.Pollers(seq, dst)
}

func (n *native) running(offers bool) uint64 {
	if offers {
		return 1 // the offers' connections change only as offers end
	}
	return n.direct.Running()
}

// yieldAfter is how many empty polls in a row a waiting caller makes
// before it yields its thread to other processes between polls: a peer
// that runs on a core of its own answers within them. Where the host's
// ranks outnumber its cores, the caller yields at once: the peer it
// waits for may be waiting for this core (measured in
// docs/DATA-PLANE.md).
const yieldAfter = 256

// yieldsAfter is yieldAfter, or 0 where cfg's ranks on a host
// outnumber the cores.
func yieldsAfter(cfg *backend.Config) int {
	if cfg.LocalSize > runtime.NumCPU() {
		return 0
	}
	return yieldAfter
}

// spinFor bounds how long a blocking caller spins on its operation
// before it parks. Where it polls the connections, it is the only busy
// thread of its process; where it cannot, it competes with the
// transport's goroutine for the cores, and a short spin serves better
// (docs/DATA-PLANE.md).
const spinFor = 50 * time.Microsecond

// Cancel cancels the operation numbered seq, if it has not ended, or
// its large messages still on offer.
func (n *native) Cancel(seq uint64, err error) {
	n.pending.Cancel(seq, err)
	if n.direct != nil {
		n.direct.Cancel(seq, err)
	}
	n.tell(n.pid, &rank.Cancel{Seq: seq, Err: err})
}

// room holds an operation's request and what it points to, so that
// reusing it allocates nothing. Its lists are made on first use, not
// held inline: a simulation keeps a room for each of a million ranks,
// which run collectives only.
type room struct {
	req    collective.Request
	submit rank.Submit
	// in and out hold the blocks of In and Out, kept with their capacity
	// across uses; they start with room for a tensor each.
	in, out [][]byte
	// msgs and wire hold a point-to-point operation's message shapes
	// and identities, kept with their capacity.
	msgs   []collective.Message
	wire   []collective.P2PMessage
	planes []*link.Plane // a collective's that runs off the actors
}

// Clear empties o for reuse, keeping no tensor or completion alive.
func (o *room) Clear() {
	o.req = collective.Request{}
	o.submit = rank.Submit{}
	clear(o.in)
	clear(o.out)
	o.in, o.out = o.in[:0], o.out[:0]
	o.msgs, o.wire = o.msgs[:0], o.wire[:0] // hold no pointers
	clear(o.planes)
	o.planes = o.planes[:0]
}

// request turns a validated Op into the rank actor's request, in o.
func (n *native) request(op *backend.Op, done backend.Completion, o *room) (*collective.Request, error) {
	req := &o.req
	*req = collective.Request{
		Comm: n.cfg.Name, CommID: n.commID, Rank: n.cfg.Rank, Op: string(op.Name), Seq: op.Seq,
		DType: op.DType, Reduce: op.Reduce, Size: n.cfg.Size, Timeout: op.Timeout, Parks: op.Blocking,
		Completion: done, Phantom: n.cfg.Device == tensor.Meta, Memory: &n.mem, Pending: &n.pending,
	}
	if o.in == nil {
		o.in, o.out = make([][]byte, 0, 1), make([][]byte, 0, 1)
	}
	o.in, o.out = tensorBytes(o.in[:0], op.Inputs), tensorBytes(o.out[:0], op.Outputs)
	req.In, req.Out = o.in, o.out
	switch {
	case op.Schedule != nil:
		req.Schedule = op.Schedule
		var red reduce.Kind
		if op.Reduce.Valid() {
			red = op.Reduce.Kind()
		}
		req.Sig = collective.Sig(0, op.DType, red, -1, nil)
		return req, nil
	case op.Kind == 0:
		return req, n.p2pRequest(op, req, o)
	}
	chunk, err := n.intHint(op, HintChunkBytes)
	if err != nil {
		return nil, err
	}
	spec := algorithms.Spec{
		Kind: op.Kind, Rank: n.cfg.Rank, Size: n.cfg.Size, Root: op.Root,
		Counts: op.Counts, SendCounts: op.Send, RecvCounts: op.Recv,
		ElemSize: op.DType.Size(), ChunkBytes: chunk, InPlace: op.InPlace, LocalSize: n.cfg.LocalSize,
		Algorithm: n.algorithm(op), Registry: n.cfg.Registry,
	}
	if err := n.plans.Plan(req, spec); err != nil {
		return nil, commerr.Invalid("%v", err)
	}
	return req, nil
}

// p2pRequest lays a point-to-point operation out as a schedule over bytes:
// message i reads or writes block i, so a batch may mix dtypes. Its
// lists go in o's room; request has emptied In and Out there. A tag
// beyond collective.MaxTag is refused: its frames would read as the
// engine's own.
func (n *native) p2pRequest(op *backend.Op, req *collective.Request, o *room) error {
	for _, m := range op.P2P {
		if m.Tag > collective.MaxTag {
			return commerr.Invalid("tag %d is beyond the largest, %d", m.Tag, collective.MaxTag)
		}
	}
	if o.wire == nil {
		// Non-nil even when no message carries bytes: P2P set is what
		// marks the request point-to-point.
		o.msgs, o.wire = make([]collective.Message, 0, 1), make([]collective.P2PMessage, 0, 1)
	}
	for _, m := range op.P2P {
		data := m.Tensor.Bytes()
		o.in, o.out = append(o.in, data), append(o.out, data)
		o.msgs = append(o.msgs, collective.Message{Peer: m.Peer, Send: m.Send, Bytes: len(data)})
		if len(data) > 0 {
			o.wire = append(o.wire, collective.P2PMessage{Peer: m.Peer, Send: m.Send, Tag: uint32(m.Tag)})
		}
	}
	req.DType, req.In, req.Out, req.P2P = tensor.Uint8, o.in, o.out, o.wire
	n.plans.PlanMessages(req, n.cfg.Rank, n.cfg.Size, o.msgs)
	return nil
}

func (n *native) hint(op *backend.Op, key string) string {
	if v, ok := op.Hints[key]; ok {
		return v
	}
	return n.cfg.Hints[key]
}

// algorithm is the schedule op names, else the one chosen for its
// collective, else the communicator's hint; empty leaves it to the
// selector.
func (n *native) algorithm(op *backend.Op) string {
	if name := op.Hints[HintAlgorithm]; name != "" {
		return name
	}
	return cmp.Or(n.cfg.Algorithms[op.Kind], n.cfg.Hints[HintAlgorithm])
}

func (n *native) intHint(op *backend.Op, key string) (int, error) {
	v := n.hint(op, key)
	if v == "" {
		return 0, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i <= 0 {
		return 0, commerr.Invalid("hint %s=%q is not a positive integer", key, v)
	}
	return i, nil
}

// tensorBytes appends the bytes of each tensor to dst.
func tensorBytes(dst [][]byte, ts []*tensor.Tensor) [][]byte {
	for _, t := range ts {
		dst = append(dst, t.Bytes())
	}
	return dst
}

func (n *native) Abort(err error) {
	if n.direct != nil {
		n.direct.Break(err, nil)
	}
	if n.pid != nil {
		n.tell(n.pid, &rank.Abort{Err: err})
	}
}

func (n *native) Finalize(ctx context.Context) error {
	if ln := n.takeEndpoint(); ln != nil {
		ln.Close()
	}
	if n.pid == nil {
		return nil
	}
	n.finalized.Store(true)
	done := make(chan struct{})
	n.tell(n.pid, &rank.Finalize{Done: func() { close(done) }})
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("gocomms: finalize %q: operations still pending: %w", n.cfg.Name, context.Cause(ctx))
	}
	n.mem.close()
	// The links have closed their connections; the last frames may still
	// be on their way out of the process.
	if err := n.mesh.release(ctx); err != nil {
		return fmt.Errorf("gocomms: finalize %q: %w", n.cfg.Name, err)
	}
	return nil
}

func (n *native) Split(ctx context.Context, group []int, cfg *backend.Config, exchange backend.Exchange) (backend.Backend, error) {
	m, err := splitMesh(ctx, n.mesh, cfg.Name, cfg.Rank, group, exchange)
	if err != nil || m == nil {
		return nil, err
	}
	return startNative(cfg, m), nil
}

// Agree runs the rank actor's fault-tolerant agreement.
func (n *native) Agree(flags uint64, done func(uint64, []int, error)) {
	n.tell(n.pid, &rank.Agree{Flags: flags, Done: func(v agree.Value, err error) { done(v.Flags, v.Failed, err) }})
}

// Revoke revokes the communicator through the rank actor.
func (n *native) Revoke() { n.tell(n.pid, &rank.Revoke{}) }

// Endpoint opens, on the first call after the last Reconfigure, the
// listener the next reconfigured communicator is reached at.
func (n *native) Endpoint() (string, error) {
	n.endpointMu.Lock()
	defer n.endpointMu.Unlock()
	if n.endpoint == nil {
		ln, err := n.cfg.Network.Listen("")
		if err != nil {
			return "", fmt.Errorf("listen: %w", err)
		}
		n.endpoint = ln
	}
	return n.endpoint.Addr(), nil
}

func (n *native) takeEndpoint() transport.Listener {
	n.endpointMu.Lock()
	defer n.endpointMu.Unlock()
	ln := n.endpoint
	n.endpoint = nil
	return ln
}

// Reconfigure connects the members at addrs as a new communicator, over
// the endpoint, lazily as NewComm's do: the addresses are all known, so
// no store is needed.
func (n *native) Reconfigure(ctx context.Context, cfg *backend.Config, id uint64, addrs []string) (backend.Backend, error) {
	ln := n.takeEndpoint()
	if ln == nil {
		return nil, errors.New("no endpoint: the init handle was not taken")
	}
	if cfg.Size == 1 {
		ln.Close()
		return startNative(cfg, &mesh{id: id, at: []int{0}}), nil
	}
	m, err := connectGroup(cfg, ln, id, func(_ context.Context, peer int) (string, error) { return addrs[peer], nil })
	if err != nil {
		ln.Close()
		return nil, err
	}
	return startNative(cfg, m), nil
}

// tell sends msg to the actor at pid, from outside the actors.
func (n *native) tell(pid *actor.PID, msg any) { runtimeOf(n.cfg).System().Root.Send(pid, msg) }

// runtimeOf returns the actor runtime cfg carries, which New checked.
func runtimeOf(cfg *backend.Config) *actors.Runtime { return cfg.Runtime.(*actors.Runtime) }
