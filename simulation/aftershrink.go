package simulation

import (
	"fmt"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
)

// shrunk is the communicator the survivors of the agreement form with
// Comm.Shrink: the ranks not agreed failed, ranked densely in their
// order, over connections of its own. Each survivor runs
// Config.AfterShrink all-reduces on it once it has it.
type shrunk struct {
	r     *run
	group []int           // run rank of each new rank
	comms []*gocomms.Comm // by new rank; nil until that survivor shrank
	data  *dataset        // by new rank
	ends  [][]opEnd       // by new rank, by iteration
}

// afterShrink runs the all-reduces on c, the communicator a survivor
// shrank to.
func (r *run) afterShrink(c *gocomms.Comm) {
	if r.shrunk == nil {
		group := c.Ranks()
		cfg := *r.cfg
		cfg.Ranks, cfg.Op, cfg.Root = len(group), algorithms.AllReduce, 0
		r.shrunk = &shrunk{r: r, group: group, comms: make([]*gocomms.Comm, len(group)),
			data: newDataset(&cfg), ends: make([][]opEnd, len(group))}
	}
	s, me := r.shrunk, c.Rank()
	s.comms[me] = c
	s.ends[me] = make([]opEnd, r.cfg.AfterShrink)
	in, _ := s.data.tensors(me)
	for it := range r.cfg.AfterShrink {
		w := c.AllReduceAsync(in[0], gocomms.Sum)
		w.OnStart(func(*gocomms.Work) { s.data.prepare(me) })
		w.OnEnd(func(w *gocomms.Work) { s.done(me, it, w.Err()) })
	}
}

func (s *shrunk) done(me, it int, err error) {
	r := s.r
	i := s.group[me]
	if r.net.crashed[i] {
		return
	}
	s.ends[me][it] = opEnd{ended: true, err: err}
	r.last = r.loop.Elapsed()
	if err == nil {
		if msg := s.data.check(me); msg != "" {
			r.wrong = append(r.wrong, fmt.Sprintf("rank %d (%d after the shrink): all-reduce #%d after the shrink: %s", i, me, it, msg))
		}
	}
}

// runRank is the run's rank of rank me of the shrunk communicator; a
// rank out of range (none the engine names) maps to itself.
func (s *shrunk) runRank(me int) int {
	if me < 0 || me >= len(s.group) {
		return me
	}
	return s.group[me]
}

// AfterShrink is how the all-reduces on the survivors' communicator
// ended (Config.AfterShrink).
type AfterShrink struct {
	Size      int `json:"size"`      // the survivors
	Joined    int `json:"joined"`    // survivors that decided and joined it
	Completed int `json:"completed"` // all-reduces that ended without error, over every rank
}

// outcome checks the shrunk communicator's invariants: every survivor
// that did not crash ran every all-reduce, each either right or failed
// for a fault that explains it.
func (s *shrunk) outcome(res *Result) {
	r := s.r
	a := &AfterShrink{Size: len(s.group)}
	for me, i := range s.group {
		if r.net.crashed[i] {
			continue
		}
		if s.comms[me] == nil {
			res.Violations = append(res.Violations, fmt.Sprintf("rank %d survived but never joined the shrunk communicator", i))
			continue
		}
		a.Joined++
		for it, e := range s.ends[me] {
			if e.ended && e.err == nil {
				a.Completed++
			}
			if v := r.judge(i, "all_reduce after the shrink", it, e, s.runRank); v != "" {
				res.Violations = append(res.Violations, v)
			}
		}
	}
	res.AfterShrink = a
}
