package collective

import (
	"slices"
	"sync"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// Plans keeps what Request.Plan derived for the specs planned last, so
// that an operation repeated with the same arguments reuses its schedule
// instead of building it again. Sharing is safe: a schedule is a function
// of its spec alone (algorithms.Generator) and immutable once built, and
// so are the results, signature and peers derived from it. The zero value
// is ready; it is safe for concurrent use.
type Plans struct {
	mu    sync.Mutex
	plans []*plan // most recently used first
}

// plansKept bounds the plans kept: a training loop repeats a few shapes.
const plansKept = 16

// plan is what Plan sets on a request of a spec, dtype and reduction,
// or what PlanMessages sets on one of messages.
type plan struct {
	msgs     []Message // nil for a collective's plan
	spec     algorithms.Spec
	dtype    tensor.DType
	reduces  bool
	red      reduce.Kind
	schedule *algorithms.Schedule
	results  []int
	sig      uint64
	peers    []int
}

// Plan is r.Plan(spec), from the cache when it can be.
func (p *Plans) Plan(r *Request, spec algorithms.Spec) error {
	if pl := p.find(func(pl *plan) bool { return pl.fits(r, &spec) }); pl != nil {
		r.Schedule, r.Results, r.Sig, r.peers = pl.schedule, pl.results, pl.sig, pl.peers
		return nil
	}
	if err := r.Plan(spec); err != nil {
		return err // not kept: a failure is no hot path
	}
	pl := &plan{spec: spec, dtype: r.DType, schedule: r.Schedule, results: r.Results, sig: r.Sig, peers: r.Peers()}
	pl.spec.Counts = slices.Clone(spec.Counts) // the caller's may change
	pl.spec.SendCounts = slices.Clone(spec.SendCounts)
	pl.spec.RecvCounts = slices.Clone(spec.RecvCounts)
	if pl.reduces = r.Reduce.Valid(); pl.reduces {
		pl.red = r.Reduce.Kind()
	}
	p.keep(pl)
	return nil
}

// Message is the shape of one point-to-point message of a batch: all its
// schedule depends on.
type Message struct {
	Peer  int
	Send  bool
	Bytes int
}

// PlanMessages sets the schedule of r, a batch of point-to-point
// messages of these shapes between rank and the others of size ranks, from
// the cache when it can be: message i reads block i of In if it sends, or
// writes block i of Out; an empty one moves nothing.
func (p *Plans) PlanMessages(r *Request, rank, size int, msgs []Message) {
	if pl := p.find(func(pl *plan) bool {
		return pl.msgs != nil && pl.spec.Rank == rank && pl.spec.Size == size && slices.Equal(pl.msgs, msgs)
	}); pl != nil {
		r.Schedule, r.Sig, r.peers = pl.schedule, pl.sig, pl.peers
		return
	}
	b := algorithms.NewBuilder(rank, size)
	for i, m := range msgs {
		if m.Bytes == 0 {
			continue
		}
		reg := algorithms.Region{Block: int32(i), Len: m.Bytes}
		if m.Send {
			reg.Buf = algorithms.Input
			b.Send(m.Peer, reg)
		} else {
			reg.Buf = algorithms.Output
			b.Recv(m.Peer, reg)
		}
	}
	r.Schedule, r.Sig = b.Build("point_to_point"), Sig(0, 0, 0, -1, nil)
	pl := &plan{msgs: slices.Clone(msgs), schedule: r.Schedule, sig: r.Sig, peers: r.Peers()}
	pl.spec.Rank, pl.spec.Size = rank, size
	p.keep(pl)
}

// find returns the kept plan that match says is the one, moved first, or
// nil.
func (p *Plans) find(match func(*plan) bool) *plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pl := range p.plans {
		if match(pl) {
			copy(p.plans[1:i+1], p.plans[:i])
			p.plans[0] = pl
			return pl
		}
	}
	return nil
}

// keep puts pl first, dropping the least recently used plan if full.
func (p *Plans) keep(pl *plan) {
	p.mu.Lock()
	if len(p.plans) < plansKept {
		p.plans = append(p.plans, nil)
	}
	copy(p.plans[1:], p.plans)
	p.plans[0] = pl
	p.mu.Unlock()
}

// fits reports whether pl is the plan of r and s: everything Plan reads.
func (pl *plan) fits(r *Request, s *algorithms.Spec) bool {
	a := &pl.spec
	if pl.msgs != nil || a.Kind != s.Kind || a.Rank != s.Rank || a.Size != s.Size || a.Root != s.Root ||
		a.ElemSize != s.ElemSize || a.ChunkBytes != s.ChunkBytes || a.InPlace != s.InPlace ||
		a.LocalSize != s.LocalSize || a.Algorithm != s.Algorithm || a.Registry != s.Registry ||
		!slices.Equal(a.Counts, s.Counts) || !slices.Equal(a.SendCounts, s.SendCounts) ||
		!slices.Equal(a.RecvCounts, s.RecvCounts) {
		return false
	}
	if pl.dtype != r.DType || pl.reduces != r.Reduce.Valid() {
		return false
	}
	return !pl.reduces || pl.red == r.Reduce.Kind()
}
