package algorithms

import (
	"fmt"
	"slices"
)

// Progress is the execution state of one run of a Schedule. The executor
// drives it: it reports message arrivals and step completions, and Progress
// answers with the steps that have just become ready. It never blocks, never
// calls out, and does not allocate once built, so it can sit inside an actor's
// receive loop.
//
// A step is ready when all its Deps are complete and, for Recv and
// RecvReduce, its message has arrived. Each step is reported ready exactly
// once per run.
type Progress struct {
	s       *Schedule
	ix      *index
	pending []int32 // deps not yet complete
	state   []uint8
	done    int
	started bool
}

const (
	arrived uint8 = 1 << iota
	issued        // reported ready
	completed
)

// NewProgress returns the state of a fresh run of s. Schedules made by Build
// or Builder.Build carry a precomputed index; a hand-made Schedule gets one
// here (s itself is not modified, so it stays safe to share).
func NewProgress(s *Schedule) *Progress {
	ix := s.ix
	if ix == nil {
		ix = newIndex(s)
	}
	n := len(s.Steps)
	p := &Progress{
		s:       s,
		ix:      ix,
		pending: make([]int32, n),
		state:   make([]uint8, n),
	}
	p.Reset()
	return p
}

// Schedule returns the schedule being run.
func (p *Progress) Schedule() *Schedule { return p.s }

// Reset rewinds p for another run of the same schedule without allocating.
func (p *Progress) Reset() {
	for i := range p.s.Steps {
		p.pending[i] = int32(len(p.s.Steps[i].Deps))
	}
	clear(p.state)
	p.done = 0
	p.started = false
}

// Start begins the run and appends to ready the steps that are ready now:
// those without deps that do not receive, plus receiving steps without deps
// whose message was reported by Arrive before Start.
func (p *Progress) Start(ready []int) []int {
	if p.started {
		panic("algorithms: Progress.Start called twice without Reset")
	}
	p.started = true
	for i := range p.pending {
		ready = p.check(i, ready)
	}
	return ready
}

// Arrive records that the message (peer, tag) has arrived. It returns ready
// with the matching step appended if that made it ready, and the index of the
// matching step. It fails, returning step -1, when no receiving step matches
// (peer, tag) or the message was already reported. Arrive may be called
// before Start.
func (p *Progress) Arrive(peer, tag int, ready []int) ([]int, int, error) {
	i := p.ix.recvStep(peer, tag)
	if i < 0 {
		return ready, -1, fmt.Errorf("algorithms: rank %d: unexpected message from rank %d with tag %d", p.s.Rank, peer, tag)
	}
	if p.state[i]&arrived != 0 {
		return ready, -1, fmt.Errorf("algorithms: rank %d: duplicate message from rank %d with tag %d", p.s.Rank, peer, tag)
	}
	p.state[i] |= arrived
	return p.check(i, ready), i, nil
}

// Complete records that the executor finished step, which must have been
// reported ready and not completed yet, and appends the steps that became
// ready.
func (p *Progress) Complete(step int, ready []int) []int {
	if step < 0 || step >= len(p.state) || p.state[step]&(issued|completed) != issued {
		panic(fmt.Sprintf("algorithms: Progress.Complete(%d): step not running", step))
	}
	p.state[step] |= completed
	p.done++
	ix := p.ix
	for _, d := range ix.out[ix.outOff[step]:ix.outOff[step+1]] {
		p.pending[d]--
		ready = p.check(int(d), ready)
	}
	return ready
}

// check appends step i if it just became ready.
func (p *Progress) check(i int, ready []int) []int {
	if !p.started || p.pending[i] != 0 || p.state[i]&issued != 0 {
		return ready
	}
	if p.s.Steps[i].Prim.Receives() && p.state[i]&arrived == 0 {
		return ready
	}
	p.state[i] |= issued
	return append(ready, i)
}

// Done reports whether every step has completed.
func (p *Progress) Done() bool { return p.done == len(p.state) }

// Remaining is the number of steps not yet completed.
func (p *Progress) Remaining() int { return len(p.state) - p.done }

// Waiting appends, sorted and without repeats, the peers whose messages this
// rank still expects: the material for a "timed out waiting for ranks …"
// error.
func (p *Progress) Waiting(peers []int) []int {
	from := len(peers)
	for i := range p.s.Steps {
		if st := &p.s.Steps[i]; st.Prim.Receives() && p.state[i]&arrived == 0 {
			peers = append(peers, st.Peer)
		}
	}
	slices.Sort(peers[from:])
	return append(peers[:from], slices.Compact(peers[from:])...)
}
