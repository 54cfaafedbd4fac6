package gocomms

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/rank"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/transport"
)

// NativeBackend is the name the built-in engine registers under.
const NativeBackend = "native"

func init() {
	if err := RegisterBackend(NativeBackend, newNative); err != nil {
		panic(err) // only a second registration of the built-in name can fail
	}
}

// Hints the native backend reads, per communicator or per operation.
const (
	// HintAlgorithm picks an algorithm by name (algorithms.Algorithms).
	HintAlgorithm = "algorithm"
	// HintChunkBytes bounds the message size a large tensor is pipelined in.
	HintChunkBytes = "chunk_bytes"
)

// native is the built-in backend: a rank actor over link actors.
type native struct {
	cfg    *Config
	commID uint64
	mesh   *mesh
	pid    *actor.PID // nil until a dynamic communicator is reconfigured
	plans  collective.Plans

	endpointMu sync.Mutex
	endpoint   transport.Listener // where the next Reconfigure's communicator listens
}

func newNative(ctx context.Context, cfg *Config) (Backend, error) {
	if cfg.Device != CPU {
		return nil, commerr.Invalid("the native backend runs on cpu, not %v", cfg.Device)
	}
	if cfg.Dynamic {
		return &native{cfg: cfg}, nil
	}
	m, err := rendezvous(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return startNative(cfg, m), nil
}

func startNative(cfg *Config, m *mesh) *native {
	rt := cfg.Runtime
	pid := rank.Spawn(rt, rank.Config{
		Comm: cfg.Name, CommID: m.id, Rank: cfg.Rank, Size: cfg.Size, Connect: m.conn, PeerFailed: m.peerFailed,
		Heartbeat: cfg.Heartbeat, Silence: cfg.Silence,
	})
	m.watch(func(peer int) { rt.System.Root.Send(pid, &rank.Connected{Peer: peer}) })
	return &native{cfg: cfg, commID: m.id, mesh: m, pid: pid}
}

func (n *native) Name() string { return NativeBackend }

func (n *native) Issue(op *Op, done Completion) func(error) {
	if !n.issue(op, done) {
		return nil
	}
	seq := op.Seq
	return func(err error) { n.cancel(seq, err) }
}

// issue is Issue without the cancel function, which Comm does without
// (Work.canceler): it reports whether op was submitted, else it has
// ended.
func (n *native) issue(op *Op, done Completion) bool { return n.issueIn(op, done, nil) }

// issueIn is issue with the request in o (nil: a new one).
func (n *native) issueIn(op *Op, done Completion, o *nativeOp) bool {
	if o == nil {
		o = &nativeOp{}
	}
	req, err := n.request(op, done, o)
	if err != nil {
		done.Finished(&commerr.OpError{Comm: n.cfg.Name, Op: string(op.Name), Seq: op.Seq, Rank: n.cfg.Rank, Err: err})
		return false
	}
	o.submit.Req = req
	n.cfg.Runtime.System.Root.Send(n.pid, &o.submit)
	return true
}

// cancel cancels the operation numbered seq, if it has not ended.
func (n *native) cancel(seq uint64, err error) {
	n.cfg.Runtime.System.Root.Send(n.pid, &rank.Cancel{Seq: seq, Err: err})
}

// nativeOp holds an operation's request and what it points to, so that
// issuing one allocates once.
type nativeOp struct {
	req    collective.Request
	submit rank.Submit
	// in and out hold the blocks of In and Out, kept with their capacity
	// across uses; they start in one, room for a tensor each.
	in, out [][]byte
	one     [2][]byte
	// msgs and wire hold a point-to-point operation's message shapes
	// and identities, kept with their capacity; they start in oneMsg
	// and oneWire.
	msgs    []collective.Message
	wire    []collective.P2PMessage
	oneWire [1]collective.P2PMessage
	oneMsg  [1]collective.Message
}

// clear empties o for reuse, keeping no tensor or Work alive.
func (o *nativeOp) clear() {
	o.req = collective.Request{}
	o.submit = rank.Submit{}
	clear(o.in)
	clear(o.out)
	o.in, o.out, o.one = o.in[:0], o.out[:0], [2][]byte{} // one may hold what in or out had before growing
	o.msgs, o.wire = o.msgs[:0], o.wire[:0]               // hold no pointers
}

// request turns a validated Op into the rank actor's request, in o.
func (n *native) request(op *Op, done Completion, o *nativeOp) (*collective.Request, error) {
	req := &o.req
	*req = collective.Request{
		Comm: n.cfg.Name, CommID: n.commID, Rank: n.cfg.Rank, Op: string(op.Name), Seq: op.Seq,
		DType: op.DType, Reduce: op.Reduce, Size: n.cfg.Size, Timeout: op.Timeout,
		Completion: done,
	}
	if o.in == nil {
		o.in, o.out = o.one[:0:1], o.one[1:1:2]
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
		n.p2pRequest(op, req, o)
		return req, nil
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
// lists go in o's room; request has emptied In and Out there.
func (n *native) p2pRequest(op *Op, req *collective.Request, o *nativeOp) {
	if o.wire == nil {
		o.msgs, o.wire = o.oneMsg[:0], o.oneWire[:0]
	}
	for _, m := range op.P2P {
		data := m.Tensor.Bytes()
		o.in, o.out = append(o.in, data), append(o.out, data)
		o.msgs = append(o.msgs, collective.Message{Peer: m.Peer, Send: m.Send, Bytes: len(data)})
		if len(data) > 0 {
			o.wire = append(o.wire, collective.P2PMessage{Peer: m.Peer, Send: m.Send, Tag: uint32(m.Tag)})
		}
	}
	req.DType, req.In, req.Out, req.P2P = Uint8, o.in, o.out, o.wire
	n.plans.PlanMessages(req, n.cfg.Rank, n.cfg.Size, o.msgs)
}

func (n *native) hint(op *Op, key string) string {
	if v, ok := op.Hints[key]; ok {
		return v
	}
	return n.cfg.Hints[key]
}

// algorithm is the schedule op names, else the one chosen for its
// collective, else the communicator's hint; empty leaves it to the
// selector.
func (n *native) algorithm(op *Op) string {
	if name := op.Hints[HintAlgorithm]; name != "" {
		return name
	}
	return cmp.Or(n.cfg.Algorithms[op.Kind], n.cfg.Hints[HintAlgorithm])
}

func (n *native) intHint(op *Op, key string) (int, error) {
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
func tensorBytes(dst [][]byte, ts []*Tensor) [][]byte {
	for _, t := range ts {
		dst = append(dst, t.Bytes())
	}
	return dst
}

func (n *native) Abort(err error) {
	if n.pid != nil {
		n.cfg.Runtime.System.Root.Send(n.pid, &rank.Abort{Err: err})
	}
}

func (n *native) Finalize(ctx context.Context) error {
	if ln := n.takeEndpoint(); ln != nil {
		ln.Close()
	}
	if n.pid == nil {
		return nil
	}
	done := make(chan struct{})
	n.cfg.Runtime.System.Root.Send(n.pid, &rank.Finalize{Done: func() { close(done) }})
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("gocomms: finalize %q: operations still pending: %w", n.cfg.Name, context.Cause(ctx))
	}
	// The links have closed their connections; the last frames may still
	// be on their way out of the process.
	if err := n.mesh.release(ctx); err != nil {
		return fmt.Errorf("gocomms: finalize %q: %w", n.cfg.Name, err)
	}
	return nil
}

func (n *native) Split(ctx context.Context, group []int, cfg *Config, exchange Exchange) (Backend, error) {
	m, err := splitMesh(ctx, n.mesh, n.cfg.Rank, group, exchange)
	if err != nil || m == nil {
		return nil, err
	}
	return startNative(cfg, m), nil
}

// Agree runs the rank actor's fault-tolerant agreement.
func (n *native) Agree(ctx context.Context, flags uint64) (uint64, []int, error) {
	type result struct {
		v   agree.Value
		err error
	}
	ch := make(chan result, 1)
	n.cfg.Runtime.System.Root.Send(n.pid, &rank.Agree{Flags: flags, Done: func(v agree.Value, err error) { ch <- result{v, err} }})
	select {
	case r := <-ch:
		return r.v.Flags, r.v.Failed, r.err
	case <-ctx.Done():
		return 0, nil, context.Cause(ctx)
	}
}

// Revoke revokes the communicator through the rank actor.
func (n *native) Revoke() { n.cfg.Runtime.System.Root.Send(n.pid, &rank.Revoke{}) }

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
func (n *native) Reconfigure(ctx context.Context, cfg *Config, id uint64, addrs []string) (Backend, error) {
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
