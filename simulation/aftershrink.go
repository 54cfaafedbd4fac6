package simulation

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/agree"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/rank"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/transport"
)

// shrunk is the communicator the survivors of the agreement form, as
// Comm.Shrink does: the ranks not agreed failed, ranked densely in their
// order, over connections of its own. Each survivor spawns its rank there
// once it decides and runs Config.AfterShrink all-reduces on it.
type shrunk struct {
	r       *run
	group   []int        // run rank of each new rank
	newRank []int        // new rank of each run rank; -1 for the failed
	pids    []*actor.PID // by new rank; nil until that survivor decided
	waiting [][]int      // by new rank: peers whose connections came up before it existed
	data    *dataset     // by new rank
	ends    [][]opEnd    // by new rank, by iteration
}

// shrink makes the survivors' communicator from the first decision.
func (r *run) shrink(v agree.Value) *shrunk {
	s := &shrunk{r: r, newRank: make([]int, r.cfg.Ranks)}
	for i := range r.cfg.Ranks {
		s.newRank[i] = -1
		if !slices.Contains(v.Failed, i) {
			s.newRank[i] = len(s.group)
			s.group = append(s.group, i)
		}
	}
	n := len(s.group)
	s.pids, s.waiting, s.ends = make([]*actor.PID, n), make([][]int, n), make([][]opEnd, n)
	cfg := *r.cfg
	cfg.Ranks, cfg.Op, cfg.Root = n, algorithms.AllReduce, 0
	s.data = newDataset(&cfg)
	return s
}

// join spawns run rank i's rank in the shrunk communicator and issues its
// all-reduces there.
func (s *shrunk) join(i int) {
	me := s.newRank[i]
	if me < 0 {
		return // the others found it failed: it is no member
	}
	r := s.r
	s.pids[me] = rank.Spawn(r.rt, rank.Config{
		Comm: "sim.shrink0", CommID: 2, Rank: me, Size: len(s.group), Heartbeat: r.cfg.Heartbeat, Silence: r.cfg.Silence,
		Connect: func(peer int) (transport.Conn, error) { return r.net.connect(shrunkComm, i, s.group[peer]) },
	})
	for _, peer := range s.waiting[me] {
		r.rt.System.Root.Send(s.pids[me], &rank.Connected{Peer: peer})
	}
	s.waiting[me] = nil
	s.ends[me] = make([]opEnd, r.cfg.AfterShrink)
	for it := range r.cfg.AfterShrink {
		req := &collective.Request{
			Comm: "sim.shrink0", CommID: 2, Rank: me, Op: algorithms.AllReduce.String(), Seq: uint64(it),
			DType: r.cfg.DType, Reduce: reduce.New(reduce.Sum), Size: len(s.group), Timeout: r.cfg.Timeout, Phantom: r.cfg.Phantom,
			In: s.data.in[me], Out: s.data.out[me],
			Completion: collective.Notify{OnStart: func() { s.data.clearOutput(me) }, OnEnd: func(err error) { s.done(me, it, err) }},
		}
		if err := req.Plan(s.data.spec(me)); err != nil {
			r.wrong = append(r.wrong, fmt.Sprintf("rank %d: planning the all-reduce after the shrink: %v", i, err))
			return
		}
		r.rt.System.Root.Send(s.pids[me], &rank.Submit{Req: req})
	}
}

// connected tells run rank to's shrunk rank that run rank peer's
// connection came up, now or once it exists.
func (s *shrunk) connected(to, peer int) {
	if s == nil {
		return
	}
	me, from := s.newRank[to], s.newRank[peer]
	if me < 0 || from < 0 {
		return
	}
	if s.pids[me] == nil {
		s.waiting[me] = append(s.waiting[me], from)
		return
	}
	s.r.rt.System.Root.Send(s.pids[me], &rank.Connected{Peer: from})
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
		if s.pids[me] == nil {
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
