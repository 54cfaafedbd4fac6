package backend

import (
	"context"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// OpName names an operation as torchcomms does.
type OpName string

// The operations a communicator issues.
const (
	OpAllReduce           OpName = "all_reduce"
	OpReduce              OpName = "reduce"
	OpBroadcast           OpName = "broadcast"
	OpAllGather           OpName = "all_gather"
	OpAllGatherSingle     OpName = "all_gather_single"
	OpAllGatherV          OpName = "all_gather_v"
	OpReduceScatter       OpName = "reduce_scatter"
	OpReduceScatterSingle OpName = "reduce_scatter_single"
	OpReduceScatterV      OpName = "reduce_scatter_v"
	OpAllToAll            OpName = "all_to_all"
	OpAllToAllSingle      OpName = "all_to_all_single"
	OpAllToAllV           OpName = "all_to_all_v_single"
	OpGather              OpName = "gather"
	OpGatherSingle        OpName = "gather_single"
	OpScatter             OpName = "scatter"
	OpBarrier             OpName = "barrier"
	OpSend                OpName = "send"
	OpRecv                OpName = "recv"
	OpBatch               OpName = "batch_op_issue"
	OpSplit               OpName = "split"
	OpAgree               OpName = "agree"
	OpShrink              OpName = "shrink"
	OpRevoke              OpName = "revoke"
	OpReconfigure         OpName = "reconfigure"
)

// Op is one validated operation, as hooks see it and a backend runs it.
// Tensors are laid out in blocks as algorithms.Spec describes for Kind.
type Op struct {
	ID      uint64 // process-wide, increasing, as torchcomms' op_id
	Seq     uint64 // sequence number on this communicator
	Name    OpName
	Kind    algorithms.Kind // the collective; 0 for point-to-point
	DType   tensor.DType
	Reduce  reduce.Op // for reductions
	Root    int       // for rooted collectives; -1 otherwise
	Counts  []int     // per algorithms.Spec
	Send    []int     // all-to-all: elements sent to each rank
	Recv    []int     // all-to-all: elements received from each rank
	InPlace bool

	Inputs  []*tensor.Tensor
	Outputs []*tensor.Tensor
	P2P     []P2P // point-to-point messages
	// Schedule is the caller's own (Comm.Custom), run over Inputs and
	// Outputs as its blocks; Kind is then 0.
	Schedule *algorithms.Schedule

	Timeout time.Duration
	// Blocking says the caller waits for the operation at once, through
	// Spinner.Spin where the backend is one: such a backend may arm the
	// operation's timeout only once that wait parks, sparing the clock
	// an operation that ends within it.
	Blocking bool
	Hints    map[string]string
	// Stream, for tensors on a GPU, is the caller's stream: the operation
	// runs after the work queued on it so far (torchcomms' current
	// stream). Nil: after the work the process queued on the device's
	// legacy default stream, and whatever that waits for.
	Stream *cuda.Stream
}

// P2P is one message of a point-to-point operation.
type P2P struct {
	Send   bool
	Peer   int
	Tag    int
	Tensor *tensor.Tensor
}

// Completion is how a backend reports an operation's progress. Started is
// called at most once, when the operation begins to run; Finished exactly
// once. The caller sees Finished's error as it is: a backend makes it a
// *commerr.OpError naming the communicator, the operation, its sequence
// number and the ranks involved, wrapping one of commerr's sentinels.
type Completion interface {
	Started()
	Finished(err error)
}

// Queued is the Completion of an operation on a GPU: a backend that queues
// the operation's work on a stream calls Queued with an event recorded
// after that work, before Finished, which it calls once the work is
// done. Until Finished, a caller's stream may wait for the event
// (Work.WaitStream) without blocking the host; the backend may reuse it
// afterwards.
type Queued interface {
	Queued(end *cuda.Event)
}

// Backend runs a communicator's operations. The front (Comm) validates
// arguments, numbers operations and runs hooks; a backend only executes.
// Issue must not block; operations start in the order they are issued.
type Backend interface {
	Name() string
	Issue(op *Op, done Completion) (cancel func(error))
	// Split creates the communicator of group (parent ranks, in new-rank
	// order) on every member; every parent rank calls it, non-members with
	// a nil group, and they get nil. exchange all-gathers one byte string
	// per parent rank, for the backend's own rendezvous.
	Split(ctx context.Context, group []int, cfg *Config, exchange Exchange) (Backend, error)
	Abort(err error)
	Finalize(ctx context.Context) error
}

// FaultTolerant is a Backend that can agree among the ranks that survive
// failures, which Comm.Agree and Comm.Shrink need.
type FaultTolerant interface {
	// Agree decides, among the ranks that survive, the AND of their flags
	// and the ranks that failed: the same on every survivor that decides.
	// It does not block: done is called once with the decision, or why
	// there is none, and must not block either.
	Agree(flags uint64, done func(flags uint64, failed []int, err error))
	// Revoke fails every rank's running, queued and later operations with
	// commerr.ErrRevoked, except agreements.
	Revoke()
}

// Exchange all-gathers one byte string per rank over a communicator: the
// result holds every rank's string, in rank order.
type Exchange func(ctx context.Context, mine []byte) ([][]byte, error)

// AsyncExchange is Exchange that does not block: done is called once,
// with every rank's string in rank order, or why there are none.
type AsyncExchange func(mine []byte, done func([][]byte, error))
