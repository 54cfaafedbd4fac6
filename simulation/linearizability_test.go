package simulation

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// A linearizability checker for histories of atomic operations on one
// 64-bit word: fetch-and-add, compare-and-swap and plain reads, each with
// the value it read, and when it was invoked and when it returned. A
// history is linearizable if the operations can be put in one order that
// keeps every operation that returned before another was invoked ahead of
// it, and in which each reads what the ones before it left (Herlihy and
// Wing). The search is Wing and Gong's, with Lowe's memoization of the
// (operations done, value) configurations already explored, as Porcupine
// does it; words are independent, so a window's history is checked word
// by word.

type atomicKind uint8

const (
	opFetchAdd atomicKind = iota + 1
	opCompareSwap
	opRead
)

// atomicOp is one operation of a history.
type atomicOp struct {
	kind   atomicKind
	arg    int64 // what a fetch-and-add adds, what a swap writes
	cmp    int64 // what a swap compares with
	result int64 // the value the word held before it
	origin int
	inv    stamp // invoked
	resp   stamp // returned
}

func (o atomicOp) String() string {
	var what string
	switch o.kind {
	case opFetchAdd:
		what = fmt.Sprintf("fetch_add(%d)", o.arg)
	case opCompareSwap:
		what = fmt.Sprintf("cas(%d→%d)", o.cmp, o.arg)
	default:
		what = "read"
	}
	return fmt.Sprintf("rank %d %s=%d [%v #%d, %v #%d]", o.origin, what, o.result, o.inv.at, o.inv.seq, o.resp.at, o.resp.seq)
}

// step applies o to a word holding v, if o could have read v.
func (o *atomicOp) step(v int64) (int64, bool) {
	if o.result != v {
		return v, false
	}
	switch o.kind {
	case opFetchAdd:
		return v + o.arg, true
	case opCompareSwap:
		if v == o.cmp {
			return o.arg, true
		}
	}
	return v, true
}

// linBudget bounds the configurations one check explores: a history the
// search cannot decide within it counts as not shown linearizable.
const linBudget = 5_000_000

// linResult is a check's verdict.
type linResult struct {
	ok       bool
	decided  bool // false: the budget ran out
	explored int  // configurations tried
	longest  int  // the most operations one partial order linearized
}

// linearizable checks a history of one word that starts at init.
func linearizable(init int64, ops []atomicOp) linResult {
	n := len(ops)
	type entry struct {
		op         int
		call       bool
		at         stamp
		match      *entry // a call's return
		prev, next *entry
	}
	entries := make([]*entry, 0, 2*n)
	for i := range ops {
		call := &entry{op: i, call: true, at: ops[i].inv}
		ret := &entry{op: i, at: ops[i].resp}
		call.match = ret
		entries = append(entries, call, ret)
	}
	slices.SortFunc(entries, func(a, b *entry) int { return cmp.Compare(a.at.seq, b.at.seq) })
	head := &entry{}
	prev := head
	for _, e := range entries {
		prev.next, e.prev = e, prev
		prev = e
	}
	lift := func(e *entry) {
		e.prev.next = e.next
		if e.next != nil {
			e.next.prev = e.prev
		}
		m := e.match
		m.prev.next = m.next
		if m.next != nil {
			m.next.prev = m.prev
		}
	}
	unlift := func(e *entry) {
		m := e.match
		m.prev.next = m
		if m.next != nil {
			m.next.prev = m
		}
		e.prev.next = e
		e.next.prev = e
	}
	done := make([]uint64, (n+63)/64)
	key := make([]byte, 8*len(done)+8)
	seen := map[string]struct{}{}
	type frame struct {
		e      *entry
		value  int64
		forced bool // no other choice was left untried
	}
	var stack []frame
	v := init
	res := linResult{decided: true}
	// backtrack undoes the choices back to the last one that left others
	// untried, and returns where to try the next, or nil if none is left.
	backtrack := func() *entry {
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			v = f.value
			done[f.e.op/64] &^= 1 << (f.e.op % 64)
			unlift(f.e)
			if !f.forced {
				return f.e.next
			}
		}
		return nil
	}
	// take linearizes e, which leaves the value nv, unless that
	// configuration was explored already (and failed).
	take := func(e *entry, nv int64, forced bool) bool {
		done[e.op/64] |= 1 << (e.op % 64)
		for i, w := range done {
			binary.LittleEndian.PutUint64(key[8*i:], w)
		}
		binary.LittleEndian.PutUint64(key[8*len(done):], uint64(nv))
		if _, old := seen[string(key)]; old {
			done[e.op/64] &^= 1 << (e.op % 64)
			return false
		}
		seen[string(key)] = struct{}{}
		res.explored++
		stack = append(stack, frame{e, v, forced})
		res.longest = max(res.longest, len(stack))
		v = nv
		lift(e)
		return true
	}
	e, fresh := head.next, true
	for head.next != nil {
		if res.explored >= linBudget {
			res.decided = false
			return res
		}
		if fresh {
			// A new configuration. An operation that may go next and reads
			// the value without changing it (a read, a failed swap) goes
			// first with no loss: every operation that must precede it is
			// linearized already (its call comes before any return left),
			// and placing it ahead of the others changes no value they
			// read. So it is placed at once, and no order that places it
			// later is tried: otherwise k such operations pending together
			// would be tried in 2^k subsets, and each state-changing
			// operation taken before one of them undone again and again.
			fresh = false
			var forced *entry
			for x := head.next; x != nil && x.call; x = x.next {
				if nv, ok := ops[x.op].step(v); ok && nv == v {
					forced = x
					break
				}
			}
			if forced != nil {
				if !take(forced, v, true) {
					e = backtrack() // explored already: this configuration fails too
					if e == nil {
						return res
					}
					continue
				}
				e, fresh = head.next, true
				continue
			}
			e = head.next
		}
		if !e.call {
			// A return whose call is not linearized: undo the last choice.
			if e = backtrack(); e == nil {
				return res
			}
			continue
		}
		if nv, ok := ops[e.op].step(v); ok && take(e, nv, false) {
			e, fresh = head.next, true
			continue
		}
		e = e.next
	}
	res.ok = true
	return res
}

// explain describes a history the checker rejected, for a failure
// message: its operations in invocation order.
func explain(init int64, ops []atomicOp) string {
	sorted := slices.SortedFunc(slices.Values(ops), func(a, b atomicOp) int { return cmp.Compare(a.inv.seq, b.inv.seq) })
	var b strings.Builder
	fmt.Fprintf(&b, "from %d:", init)
	for i, o := range sorted {
		if i == 40 {
			fmt.Fprintf(&b, "\n\t... %d more", len(sorted)-i)
			break
		}
		fmt.Fprintf(&b, "\n\t%v", o)
	}
	return b.String()
}

// atomicsWorkload is the linearizability test's job: every rank issues
// its fetch-and-adds and compare-and-swaps to words of a few targets'
// windows, keeping up to depth of them in flight, and the harness records
// each one's invocation and return on the loop's clock. Adds add 1 to 100
// and a swap writes 1 to 100 more than the value it compares with (the
// last it read there), so a word only grows: every operation that changes
// it reads a value no other one reads, and one applied twice, or lost,
// leaves the final value where no order of the history can reach.
type atomicsWorkload struct {
	targets []int // the ranks whose windows the atomics hit
	words   int   // per window
	ops     int   // per rank
	depth   int
}

// atomicsRun is what one run recorded.
type atomicsRun struct {
	histories [][]atomicOp // by target index and word: targets[i]'s word w at i*words+w
	failed    []string     // operations that ended with an error
	res       *rmaResult
}

// runAtomics runs w on a job set up by s; every word's history ends with
// a read of the value the word was left with.
func runAtomics(s rmaSetup, w atomicsWorkload) (*atomicsRun, error) {
	s.bytes, s.slots = 8*w.words, 0
	out := &atomicsRun{histories: make([][]atomicOp, len(w.targets)*w.words)}
	type client struct {
		me, left, inflight int
		seen               []int64 // by history: the last value this rank read
		rng                *rand.Rand
	}
	var j *rmaJob
	var pump func(c *client)
	issue := func(c *client) {
		ti := c.rng.IntN(len(w.targets))
		wi := c.rng.IntN(w.words)
		h := ti*w.words + wi
		t := w.targets[ti]
		op := atomicOp{origin: c.me, kind: opFetchAdd, arg: 1 + c.rng.Int64N(100)}
		if c.rng.IntN(5) < 2 {
			op.kind, op.cmp = opCompareSwap, c.seen[h]
			op.arg = op.cmp + 1 + c.rng.Int64N(100)
		}
		res := make([]byte, 8)
		wop := &backend.WindowOp{Code: backend.WindowFetchAndOp, Peer: t, Offset: uint64(8 * wi), Len: 8, DType: tensor.Int64, Reduce: reduce.Sum, Data: payload(op.arg), Result: res}
		if op.kind == opCompareSwap {
			wop.Code, wop.Data = backend.WindowCompareAndSwap, payload(op.arg, op.cmp)
		}
		c.inflight++
		op.inv = j.now()
		wop.Done = func(err error) {
			op.resp = j.now()
			c.inflight--
			if err != nil {
				out.failed = append(out.failed, fmt.Sprintf("rank %d: %v on rank %d word %d: %v", c.me, op, t, wi, err))
			} else {
				op.result = word(res, 0)
				c.seen[h] = op.result
				if op.kind == opCompareSwap && op.result == op.cmp {
					c.seen[h] = op.arg
				}
				out.histories[h] = append(out.histories[h], op)
			}
			pump(c)
		}
		j.send(c.me, wop)
	}
	pump = func(c *client) {
		for c.left > 0 && c.inflight < w.depth {
			c.left--
			issue(c)
		}
	}
	clients := make([]*client, s.ranks)
	for i := range clients {
		clients[i] = &client{me: i, left: w.ops, seen: make([]int64, len(out.histories)), rng: rand.New(rand.NewPCG(s.seed, workloadStream+uint64(i)))}
	}
	j, err := newRMAJob(s, func(*rmaJob) {
		for _, c := range clients {
			pump(c)
		}
	})
	if err != nil {
		return nil, err
	}
	defer j.close()
	j.run()
	for _, c := range clients {
		if c.left > 0 || c.inflight > 0 {
			out.failed = append(out.failed, fmt.Sprintf("rank %d: %d atomics never issued and %d never ended (virtual time %v)", c.me, c.left, c.inflight, j.r.loop.Elapsed()))
		}
	}
	for ti, t := range w.targets {
		for k := range w.words {
			h := ti*w.words + k
			read := atomicOp{kind: opRead, origin: -1, inv: j.now()}
			read.result = word(j.mem[t], k)
			read.resp = j.now()
			out.histories[h] = append(out.histories[h], read)
		}
	}
	out.res = &rmaResult{
		hash: j.r.trace.Hash(), events: j.r.trace.Events(), simTime: j.r.loop.Elapsed(),
		redials: j.r.net.redials, frames: j.r.net.frames,
		sentAgain: again(j.sent), deliveredAgain: again(j.delivered), violations: j.bad,
	}
	return out, nil
}

// atomicsSetup is seed's job in the linearizability sweep: 64 ranks on 8
// nodes hitting words of one to three targets; odd seeds reset links
// while the atomics run, so that frames are sent again after reconnects.
func atomicsSetup(seed uint64) (rmaSetup, atomicsWorkload) {
	s := rmaSetup{
		ranks: 64, topo: DGXH100(8), seed: seed,
		jitter: time.Duration(seed/2%3) * time.Microsecond,
		limit:  10 * time.Second,
	}
	w := atomicsWorkload{
		targets: [][]int{{0}, {0, 37}, {5, 21, 60}}[seed%3],
		words:   2 + int(seed/3%3),
		ops:     4 + int(seed/5%3),
		depth:   1 + int(seed/7%2),
	}
	if seed%2 == 1 {
		rng := rand.New(rand.NewPCG(seed, chaosStream))
		at := func() time.Duration { return time.Duration(rng.Int64N(int64(atomicsWithin))) }
		s.plan = Plan{
			{Kind: Flap, Ranks: []int{w.targets[0]}, At: at(), For: 5*time.Microsecond + time.Duration(rng.Int64N(int64(atomicsWithin)))},
			{Kind: Drop, At: at()},
		}
	}
	return s, w
}

// atomicsWithin is about how long the atomics run.
const atomicsWithin = 60 * time.Microsecond

// TestAtomicsLinearizable: 64 ranks fetch-and-add and compare-and-swap
// words of one to three targets' windows at once, over 60 seeds (4 with
// -short; GOCOMMS_SIM_ATOMICS_SEEDS for more), half of them with every
// link dropped and a target's links flapping while the atomics run, so
// that requests and replies are sent again after reconnects. Every
// operation must complete, and each word's history (invocation and
// return on the loop's clock, and the value read), ending with a read of
// what the word was left with, must be linearizable: an operation applied
// twice, or not atomically, or out of real-time order, would not be.
func TestAtomicsLinearizable(t *testing.T) {
	n := uint64(60)
	if testing.Short() {
		n = 4
	}
	from, to := seedRange(t, atomicsSeedsEnv, n)
	var ops, histories, explored, sentAgain, redials int
	start := time.Now()
	for seed := from; seed < to; seed++ {
		s, w := atomicsSetup(seed)
		run, err := runAtomics(s, w)
		if err != nil {
			t.Fatal(err)
		}
		sentAgain += run.res.sentAgain
		redials += int(run.res.redials)
		bad := append(slices.Clone(run.res.violations), run.failed...)
		for h, hist := range run.histories {
			r := linearizable(0, hist)
			ops += len(hist) - 1
			histories++
			explored += r.explored
			switch {
			case !r.decided:
				bad = append(bad, fmt.Sprintf("rank %d's word %d: undecided after %d configurations", w.targets[h/w.words], h%w.words, r.explored))
			case !r.ok:
				bad = append(bad, fmt.Sprintf("rank %d's word %d is not linearizable (the longest order found covers %d of %d operations): %s",
					w.targets[h/w.words], h%w.words, r.longest, len(hist), explain(0, hist)))
			}
		}
		if len(bad) > 0 {
			t.Errorf("seed %d: %+v, faults %q:\n\t%s\n%s", seed, w, s.plan, strings.Join(bad, "\n\t"), replay("TestAtomicsLinearizable", atomicsSeedsEnv, seed))
		}
	}
	if to-from >= 4 && sentAgain == 0 {
		t.Errorf("%d seeds sent no window frame again: the faults missed the atomics", to-from)
	}
	t.Logf("%d seeds in %v: %d atomics in %d word histories, %d configurations explored; %d reconnections, %d window frames sent again",
		to-from, time.Since(start).Round(time.Millisecond), ops, histories, explored, redials, sentAgain)
}

// TestLinearizabilityCheckerRejects: a checker that always says yes is
// worth nothing. It must accept histories that some order explains, and
// reject those none does: by hand, and histories recorded from a run,
// then broken as a faulty window would break them.
func TestLinearizabilityCheckerRejects(t *testing.T) {
	at := func(inv, resp uint64) (stamp, stamp) { return stamp{seq: inv}, stamp{seq: resp} }
	op := func(kind atomicKind, arg, cmp, result int64, inv, resp uint64) atomicOp {
		o := atomicOp{kind: kind, arg: arg, cmp: cmp, result: result}
		o.inv, o.resp = at(inv, resp)
		return o
	}
	fa := func(add, result int64, inv, resp uint64) atomicOp { return op(opFetchAdd, add, 0, result, inv, resp) }
	cas := func(cmp, nv, result int64, inv, resp uint64) atomicOp {
		return op(opCompareSwap, nv, cmp, result, inv, resp)
	}
	read := func(result int64, inv, resp uint64) atomicOp { return op(opRead, 0, 0, result, inv, resp) }
	for name, c := range map[string]struct {
		ops  []atomicOp
		want bool
	}{
		"sequential adds":                             {[]atomicOp{fa(1, 0, 1, 2), fa(1, 1, 3, 4), fa(1, 2, 5, 6)}, true},
		"one value read twice, in sequence":           {[]atomicOp{fa(1, 0, 1, 2), fa(1, 0, 3, 4)}, false},
		"one value read twice, overlapping":           {[]atomicOp{fa(1, 0, 1, 4), fa(1, 0, 2, 3)}, false},
		"overlapping, the later one applied first":    {[]atomicOp{fa(5, 3, 1, 10), fa(3, 0, 2, 4)}, true},
		"the later one first, not overlapping":        {[]atomicOp{fa(5, 3, 1, 2), fa(3, 0, 3, 4)}, false},
		"an add applied twice":                        {[]atomicOp{fa(2, 0, 1, 2), fa(3, 2, 3, 4), read(7, 5, 6)}, false},
		"an add applied once":                         {[]atomicOp{fa(2, 0, 1, 2), fa(3, 2, 3, 4), read(5, 5, 6)}, true},
		"a swap, then a read":                         {[]atomicOp{cas(0, 7, 0, 1, 2), read(7, 3, 4)}, true},
		"two swaps out of one value":                  {[]atomicOp{cas(0, 7, 0, 1, 2), cas(0, 9, 0, 3, 4)}, false},
		"a failed swap that read a value never there": {[]atomicOp{cas(5, 7, 3, 1, 2)}, false},
		"a failed swap inside an add, before it":      {[]atomicOp{fa(5, 0, 1, 10), cas(9, 20, 0, 2, 3), read(5, 11, 12)}, true},
		"a failed swap inside an add, after it":       {[]atomicOp{fa(5, 0, 1, 10), cas(9, 20, 5, 2, 3), read(5, 11, 12)}, true},
		"a failed swap after an add, reading before":  {[]atomicOp{fa(5, 0, 1, 2), cas(9, 20, 0, 3, 4), read(5, 11, 12)}, false},
		"swaps and adds interleaved": {[]atomicOp{
			fa(4, 0, 1, 8), cas(4, 10, 4, 2, 9), fa(1, 10, 3, 12), cas(4, 20, 11, 10, 13), read(11, 14, 15),
		}, true},
	} {
		if r := linearizable(0, c.ops); r.ok != c.want || !r.decided {
			t.Errorf("%s: linearizable = %v (decided %v), want %v: %s", name, r.ok, r.decided, c.want, explain(0, c.ops))
		}
	}

	// Histories from a run with flaps, broken three ways.
	s, w := atomicsSetup(1)
	run, err := runAtomics(s, w)
	if err != nil {
		t.Fatal(err)
	}
	broken := 0
	for h, hist := range run.histories {
		if r := linearizable(0, hist); !r.ok {
			t.Fatalf("recorded history %d is not linearizable: %s", h, explain(0, hist))
		}
		var adds []int
		for i, o := range hist {
			if o.kind == opFetchAdd {
				adds = append(adds, i)
			}
		}
		if len(adds) < 2 {
			continue
		}
		// Two adds that read one value: one saw the other not applied.
		dup := slices.Clone(hist)
		dup[adds[1]].result = dup[adds[0]].result
		// An add applied twice: the final read is one addend too high.
		twice := slices.Clone(hist)
		twice[len(twice)-1].result += hist[adds[0]].arg
		// An add that took effect after it returned: it answers for a
		// value from after an operation invoked later.
		late := slices.Clone(hist)
		first := slices.MinFunc(adds, func(a, b int) int { return cmp.Compare(hist[a].resp.seq, hist[b].resp.seq) })
		late[first].result = hist[len(hist)-1].result
		for what, bad := range map[string][]atomicOp{"a value read twice": dup, "an add applied twice": twice, "an add read from the future": late} {
			if r := linearizable(0, bad); r.ok {
				t.Errorf("history %d with %s is accepted: %s", h, what, explain(0, bad))
			}
		}
		broken++
	}
	if broken == 0 {
		t.Fatal("no recorded history had two adds to break")
	}
}

// TestLinearizabilityCheckerMatchesBruteForce: on small random histories,
// half of them with one result changed, the checker,
// with its memoization and its placing of value-preserving operations at
// once, agrees with trying every order that keeps real time.
func TestLinearizabilityCheckerMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	verdicts := map[bool]int{}
	for range 3000 {
		// A history that is linearizable by construction: operations
		// take effect one at a time, at points 4 apart, each inside an
		// interval drawn around its point; then, half the time, one result
		// is changed.
		n := 1 + rng.IntN(7)
		ops := make([]atomicOp, n)
		var v int64
		for i := range ops {
			o := atomicOp{kind: atomicKind(1 + rng.IntN(3)), arg: rng.Int64N(3), cmp: rng.Int64N(3)}
			o.result = v
			v, _ = o.step(v)
			point := uint64(4*i + 2)
			// Stamps are unique in a run: each interval's ends are too.
			o.inv = stamp{seq: (point-min(point, 4*rng.Uint64N(3)+1))*16 + uint64(i)}
			o.resp = stamp{seq: (point+4*rng.Uint64N(3)+1)*16 + uint64(i)}
			ops[i] = o
		}
		if rng.IntN(2) == 0 {
			ops[rng.IntN(n)].result += 1 - 2*rng.Int64N(2)
		}
		rng.Shuffle(n, func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		want := bruteForce(0, ops, make([]bool, n), n)
		verdicts[want]++
		if got := linearizable(0, ops); got.ok != want || !got.decided {
			t.Fatalf("the checker says %v (decided %v), trying every order %v: %s", got.ok, got.decided, want, explain(0, ops))
		}
	}
	if verdicts[true] < 300 || verdicts[false] < 300 {
		t.Errorf("verdicts %v: the histories do not test both answers", verdicts)
	}
}

// bruteForce reports whether some order of the left operations that
// keeps real time reads what each read, from v.
func bruteForce(v int64, ops []atomicOp, done []bool, left int) bool {
	if left == 0 {
		return true
	}
	for i := range ops {
		if done[i] {
			continue
		}
		blocked := false
		for j := range ops {
			if !done[j] && j != i && ops[j].resp.before(ops[i].inv) {
				blocked = true
				break
			}
		}
		nv, ok := ops[i].step(v)
		if blocked || !ok {
			continue
		}
		done[i] = true
		found := bruteForce(nv, ops, done, left-1)
		done[i] = false
		if found {
			return true
		}
	}
	return false
}
