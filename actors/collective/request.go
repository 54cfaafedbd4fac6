package collective

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
)

// Request is everything one operation needs, fixed before it starts.
type Request struct {
	Comm     string // communicator name, for errors
	CommID   uint64
	Rank     int
	Op       string // operation name, for errors
	Seq      uint64 // sequence number of the operation on this rank, for errors
	Schedule *algorithms.Schedule
	DType    tensor.DType
	Reduce   reduce.Op
	Size     int // ranks that contribute to a reduction, for Avg

	// In and Out hold the blocks of the schedule's Input and Output buffers.
	In, Out [][]byte
	// Results are the Output blocks that hold a finished reduction on this
	// rank, where reduce.Finish applies.
	Results []int
	// Phantom runs the schedule without moving data: every region is a
	// transport.Phantom view of its size, sends carry it, and receives
	// neither copy nor reduce. The simulator sets it to time operations
	// whose buffers would not fit in memory; In and Out go unused.
	Phantom bool

	// Frames of a collective carry Kind Collective and Seq CollSeq; a
	// point-to-point operation sets P2P instead, one entry per step of its
	// schedule (each step sends or receives one message).
	CollSeq uint64
	P2P     []P2PMessage
	Sig     uint64 // signature every frame carries and every receiver checks

	Timeout time.Duration
	// Parks says the issuer waits for the operation at once and tells a
	// Direct running it when its wait parks (Direct.Park), which arms the
	// timeout only then.
	Parks bool
	// Links holds the link actor of each rank of Peers, in that order, and
	// Lend says whether its connection borrows large payloads
	// (transport.Borrower).
	Links []*actor.PID
	Lend  []bool
	// Planes holds the data plane of each of those links, where the
	// collective's frames come.
	Planes []*link.Plane
	// Lazy says the rank links the collective's peers as it comes to them
	// and releases each link once the collective is done with its peer:
	// Links, Lend and Planes are the request's own, nil for a peer not
	// linked (NeedLink, Linked, DoneWith).
	Lazy bool
	// Strays is where the rank's planes answer the frames that no step
	// of a collective takes.
	Strays *link.Strays
	// Pending is where the rank finds an operation that ended with
	// large messages still on offer, to cancel it; nil for none.
	Pending *Pending
	// Memory is the communicator's registered memory, nil if it has
	// none: a send from it may go as a descriptor the peer maps, and a
	// receive maps what a peer's descriptor names.
	Memory Memory

	// Completion is told when the operation begins to run, and exactly
	// once when it ends, with nil or an *commerr.OpError.
	Completion Completion

	peers []int       // found by Peers
	ended atomic.Bool // End was called
	// awaiting holds the large messages the operation offered, which
	// its Work waits for after it ended here (rendezvous.go).
	awaiting *awaiting
}

// Completion is how a request tells its issuer of its progress. An
// issuer with an object at hand implements it there, and makes no
// closures per operation; Notify adapts two functions.
type Completion interface {
	Started()
	Finished(err error)
}

// Notify is a Completion of functions, either of which may be nil.
type Notify struct {
	OnStart func()
	OnEnd   func(error)
}

func (n Notify) Started() {
	if n.OnStart != nil {
		n.OnStart()
	}
}

func (n Notify) Finished(err error) {
	if n.OnEnd != nil {
		n.OnEnd(err)
	}
}

// Begin tells the issuer that the operation begins to run.
func (r *Request) Begin() { r.Completion.Started() }

// End completes the operation, exactly once: it tells the issuer err,
// and Ended reports true from then on. An operation that offered large
// messages tells the issuer once they all went (awaiting).
func (r *Request) End(err error) {
	r.ended.Store(true)
	if r.awaiting != nil {
		r.awaiting.ended(err)
		return
	}
	r.Completion.Finished(err)
}

// Release tells the issuer that the rank no longer holds r, if its
// Completion asks to know (with a Released method): the issuer may reuse
// r then, and what it points to. The rank calls it once per request, after
// End; one whose large messages have yet to go is released once they
// did.
func (r *Request) Release() {
	if r.awaiting != nil && r.awaiting.holdRelease() {
		return
	}
	r.release()
}

func (r *Request) release() {
	if x, ok := r.Completion.(interface{ Released() }); ok {
		x.Released()
	}
}

// Ended reports whether End was called: whether the actor running the
// operation completed it, as its parent asks when that actor stops.
func (r *Request) Ended() bool { return r.ended.Load() }

// Peers lists the ranks the operation exchanges messages with, in
// increasing order: the links it needs, and whom it tells of its failure.
func (r *Request) Peers() []int {
	if r.peers != nil {
		return r.peers
	}
	r.peers = []int{}
	if r.P2P != nil {
		for _, m := range r.P2P {
			r.peers = append(r.peers, m.Peer)
		}
	} else {
		for _, s := range r.Schedule.Steps {
			if s.Prim == algorithms.Send || s.Prim.Receives() {
				r.peers = append(r.peers, s.Peer)
			}
		}
	}
	slices.Sort(r.peers)
	// A copy of their own length: the list had room for every step's
	// peer, and the plan cache keeps it.
	r.peers = slices.Clone(slices.Compact(r.peers))
	return r.peers
}

// Memory is a communicator's registered memory (Comm.Alloc): memory
// files the ranks of a host map, so that a collective reads a peer's
// tensor in place. Descriptors are the memory's own business: a sender
// makes one, a receiver maps what it names.
type Memory interface {
	// Describe appends to dst the descriptor of region b, if b lies in
	// registered memory, and reports whether it does.
	Describe(b, dst []byte) ([]byte, bool)
	// Resolve returns the n bytes a peer's descriptor names, mapped here.
	Resolve(desc []byte, n int) ([]byte, error)
}

// P2PMessage is the wire identity of one point-to-point message of a batch:
// the ordinal of the message between this pair of ranks with this user tag.
type P2PMessage struct {
	Peer    int
	Send    bool
	Ordinal uint64
	Tag     uint32
}

// Finished tells the parent that the operation with this Seq has ended.
// StuckOn lists the ranks a collective (CollSeq) that timed out was waiting
// for, so that the rank can still answer other ranks' probes about it.
type Finished struct {
	Seq     uint64
	Err     error
	CollSeq uint64
	StuckOn []int
}

// NeedLink asks the rank for the link to Peer, which lazy collective
// Seq sends to and has no link to: the rank answers with Linked.
type NeedLink struct {
	Seq  uint64
	Peer int
}

// Linked gives the running lazy collective Seq the link to Peer: asked
// for (NeedLink), or made because Peer connected.
type Linked struct {
	Seq   uint64
	Peer  int
	Link  *actor.PID
	Lend  bool
	Plane *link.Plane
}

// DoneWith tells the rank that lazy collective Seq has let go of its
// link to Peer, which it has no use for until its next run of steps with
// Peer, if any: the rank may release it.
type DoneWith struct {
	Seq  uint64
	Peer int
}

// Unlinked tells lazy collective Seq that the rank releases its link to
// Peer, whose rank released its end: the collective lets go of it, and
// asks for the next one (NeedLink).
type Unlinked struct {
	Seq   uint64
	Peer  int
	Plane *link.Plane // the plane of the link released
}

// PeerLost tells the rank that the operation Seq still waits for Peer,
// whose connection failed with Err; the rank answers with a Fail.
type PeerLost struct {
	Seq  uint64
	Peer int
	Err  error
}

// Fail asks a running operation to fail with Err, naming Ranks. With Tell,
// the failure is reported to the operation's peers, whose copies of a
// collective then fail too instead of waiting for this one; Forward passes
// on a peer's report (a ControlFailed payload) instead. Each rank passes a
// report on once, to its own peers, so that it floods every rank of the
// collective over the links the collective uses, whatever its size.
type Fail struct {
	Err     error
	Ranks   []int
	Tell    bool
	Forward []byte
	// Canceled says this rank's caller cancelled the operation: its peers
	// fail with ErrPeerCanceled.
	Canceled bool
}

// reportFor is what req's peers are told of f: the peer's report it
// forwards, or its own if it is to tell them, or nil. A point-to-point
// operation's failure is its own caller's: its peers hear nothing.
func (f *Fail) reportFor(req *Request) []byte {
	switch {
	case req.P2P != nil:
		return nil
	case f.Forward != nil:
		return f.Forward
	case f.Tell:
		return f.report(req.Rank)
	}
	return nil
}

// errorOf is the error req ends with, failing with f.
func (f *Fail) errorOf(req *Request) error {
	return &commerr.OpError{Comm: req.Comm, Op: req.Op, Seq: req.Seq, Rank: req.Rank, Ranks: f.Ranks, Err: f.Err}
}

// report is the ControlFailed payload that tells rank's peers of f.
func (f *Fail) report(rank int) []byte {
	kind, reason := FailedOther, f.Err.Error()
	switch {
	case f.Canceled:
		kind = FailedCanceled
	case errors.Is(f.Err, commerr.ErrInvalidArgument):
		// The receiver's error names the sentinel once, not twice.
		kind, reason = FailedMismatch, strings.TrimPrefix(reason, commerr.ErrInvalidArgument.Error()+": ")
	}
	return EncodeFailure(rank, kind, reason)
}

// startedHere and endedHere tell the rank's planes that the collective
// started or ended here, so that a peer's frame of it that no step takes
// is answered (link.Strays). The planes are told that it started once it
// attached to them, and that it ended before it lets go of them. A lazy
// collective attaches to a plane only as it links the peer: a frame on
// a plane it has not reached yet is no stray, and is answered, if no
// step takes it, once the collective ended.
func (r *Request) startedHere() {
	if r.P2P == nil && r.Strays != nil && !r.Lazy {
		r.Strays.Started(r.CollSeq, r.Sig)
	}
}

func (r *Request) endedHere(succeeded bool, failure []byte) {
	if r.P2P == nil && r.Strays != nil {
		r.Strays.Ended(r.CollSeq, r.Sig, succeeded, failure)
	}
}

// peerIndex returns where peer is in Peers, and so in Links, Lend and
// Planes, and whether it is there.
func (r *Request) peerIndex(peer int) (int, bool) { return slices.BinarySearch(r.Peers(), peer) }

// builders are the Builders Plan reuses: one per goroutine planning at
// once, where a Builder per plan would leave its arrays to the collector.
var builders = sync.Pool{New: func() any { return new(algorithms.Builder) }}

// Plan builds the schedule of the collective spec describes, with every
// one-way edge acknowledged (algorithms.Acknowledged), so that every rank
// receives a frame from each of its peers; marks the Output blocks that
// hold a finished reduction here; and signs the operation: every frame
// carries the signature, and every receiver checks it. DType and Reduce
// must be set.
func (r *Request) Plan(spec algorithms.Spec) error {
	b := builders.Get().(*algorithms.Builder)
	s, err := b.Rebuild(spec)
	builders.Put(b)
	if err != nil {
		return err
	}
	r.Schedule = algorithms.Acknowledged(s)
	var counts []int
	if spec.Kind != algorithms.AllToAll {
		counts = spec.Counts
	}
	var red reduce.Kind
	if r.Reduce.Valid() {
		red = r.Reduce.Kind()
		switch {
		case spec.Kind == algorithms.AllReduce, spec.Kind == algorithms.ReduceScatter,
			spec.Kind == algorithms.Reduce && spec.Root == spec.Rank:
			r.Results = []int{0}
		}
	}
	r.Sig = Sig(spec.Kind, r.DType, red, spec.Root, counts)
	return nil
}

// header returns the header of the frame that step i sends.
func (r *Request) header(i int) transport.Header {
	if r.P2P != nil {
		m := r.P2P[i]
		return transport.Header{Comm: r.CommID, Kind: transport.PointToPoint, Seq: m.Ordinal, Tag: m.Tag, Sig: r.Sig}
	}
	return transport.Header{Comm: r.CommID, Kind: transport.Collective, Seq: r.CollSeq, Tag: uint32(r.Schedule.Steps[i].Tag), Sig: r.Sig}
}
