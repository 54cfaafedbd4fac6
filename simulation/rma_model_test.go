package simulation

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// The reference model of a window workload whose results can be checked
// although every rank works on every rank's window at once. Each rank's
// window is int64 words laid out alike on every rank:
//
//   - a private region per origin, which only that origin puts to and
//     gets from: a get must read exactly what the origin's own puts left
//     there, as issued before it, since operations from one origin to one
//     target are applied in issue order;
//   - a signal region per origin, which only that origin writes, each
//     time a new version (the version, the pair, a pattern of both); its
//     signals on slot origin carry the latest version they cover, so a
//     waiter that sees version k must find at least version k's data in
//     place (signal visible, data visible), whether the signal came with
//     the put (PutSignal) or after it (Signal);
//   - shared counters, which every origin accumulates into, fetch-and-adds
//     and get-accumulates with positive addends: each ends at the sum of
//     every contribution (one applied twice, by a retransmission, shows),
//     and the values the fetching ones read are the starts of disjoint
//     intervals;
//   - shared swap words, which every origin compare-and-swaps with values
//     no one used before: the swaps that succeeded form one chain from 0
//     to the word's final value, and every value a swap read lies on it,
//     at or after what the same origin read before.
//
// Slot origin holds origin's version signals; slot ranks+origin counts
// its notifications, which counting waits take one by one.
const (
	privWords    = 4
	sigWords     = 3
	counterWords = 4
	swapWords    = 2
)

type rmaLayout struct{ ranks int }

func (l rmaLayout) priv(o int) int    { return o * privWords }
func (l rmaLayout) sig(o int) int     { return l.ranks*privWords + o*sigWords }
func (l rmaLayout) counter(w int) int { return l.ranks*(privWords+sigWords) + w }
func (l rmaLayout) swap(w int) int    { return l.ranks*(privWords+sigWords) + counterWords + w }
func (l rmaLayout) words() int        { return l.ranks*(privWords+sigWords) + counterWords + swapWords }
func (l rmaLayout) slots() int        { return 2 * l.ranks }

// sigData is version v of origin o's signal region on target t; version
// 0 is the zeroed window.
func sigData(o, t int, v int64) []int64 {
	if v == 0 {
		return make([]int64, sigWords)
	}
	return []int64{v, int64(o)<<32 | int64(t), int64(uint64(v)*0x9e3779b97f4a7c15 ^ uint64(o<<8|t))}
}

// putValue is what origin o's operation number seq puts in word i of its
// private region on t: no two puts write the same value.
func putValue(o, t int, seq int64, i int) int64 {
	return int64(o+1)<<52 | int64(t)<<44 | seq<<4 | int64(i)
}

// swapValue is what origin o's operation number seq swaps in: never 0,
// never used twice.
func swapValue(o int, seq int64) int64 { return int64(o+1)<<40 | seq }

// rmaWorkload is how busy the ranks are.
type rmaWorkload struct {
	ops   int // each rank issues this many, after a notification to every rank
	depth int // and keeps at most this many waiting for their end
	// sabotage makes the ranks break the rules the model checks, so that
	// a test can show the model catches it.
	sabotage sabotage
}

// sabotage is a way for a workload to break a rule on purpose.
type sabotage int

const (
	fair        sabotage = iota
	applyTwice           // every accumulate is sent twice, as a retransmission applied again would
	signalEarly          // a put with signal sends its signal before its data
	putLate              // a put to the private region leaves 20µs late, behind operations issued after it
)

// rmaModel drives the workload on a job and checks every result.
type rmaModel struct {
	j        *rmaJob
	lay      rmaLayout
	n        int
	crashed  int // the rank a crash stops, or -1: then operations may fail, naming it
	sabotage sabotage
	clients  []*rmaClient
	added    [][]int64     // by target, counter word: the contributions issued
	fetches  [][][]fetched // by target, counter word
	swaps    [][][]swapped // by target, swap word
	seen     [][]uint64    // by target, origin: the highest version a waiter saw
	counted  [][]int64     // by target, origin: notifications counting waits took
	waiting  [][][2]bool   // by target, origin: a version wait, a counting wait, registered
	digest   uint64        // of every result, in the order they came
	failed   []failedOp    // operations that ended with an error
	stats    rmaStats
	bad      []string
}

type rmaStats struct {
	issued, completed, checks int64
}

type fetched struct {
	origin   int
	seq      int64
	old, add int64
}

type swapped struct {
	origin        int
	seq           int64
	cmp, new, old int64
}

type failedOp struct {
	origin, target int
	what           string
	at             time.Duration
	err            error
}

// rmaClient is one rank's side of the workload.
type rmaClient struct {
	m        *rmaModel
	me       int
	rng      *rand.Rand
	left     int // operations still to issue
	inflight int
	depth    int
	seq      int64
	views    []rmaView // by target: what this origin knows it left there
	syncing  bool      // a flush waits for the operations before it to end, then runs alone
	flushing bool
	syncTo   int
}

type rmaView struct {
	priv      []int64
	version   int64 // the latest version put in its signal region
	signalled int64 // the latest version a signal covered
	notified  int64
	swapSeen  [swapWords]int64
}

// workloadStream keeps a workload's choices apart from the loop's and the
// plan's, which the same seed seeds.
const workloadStream = 0x5eed0f0e5ade7a11

func newRMAModel(s *rmaSetup, w rmaWorkload, crashed int) *rmaModel {
	n := s.ranks
	lay := rmaLayout{n}
	s.bytes, s.slots = 8*lay.words(), lay.slots()
	m := &rmaModel{lay: lay, n: n, crashed: crashed, sabotage: w.sabotage, digest: fnvOffset}
	m.added, m.fetches, m.swaps = make([][]int64, n), make([][][]fetched, n), make([][][]swapped, n)
	m.seen, m.counted, m.waiting = make([][]uint64, n), make([][]int64, n), make([][][2]bool, n)
	for t := range n {
		m.added[t], m.fetches[t], m.swaps[t] = make([]int64, counterWords), make([][]fetched, counterWords), make([][]swapped, swapWords)
		m.seen[t], m.counted[t], m.waiting[t] = make([]uint64, n), make([]int64, n), make([][2]bool, n)
	}
	for o := range n {
		c := &rmaClient{
			m: m, me: o, rng: rand.New(rand.NewPCG(s.seed, workloadStream+uint64(o))),
			left: w.ops, depth: w.depth, views: make([]rmaView, n),
		}
		for t := range c.views {
			c.views[t].priv = make([]int64, privWords)
		}
		m.clients = append(m.clients, c)
	}
	return m
}

// start runs on the loop once every window is open: every rank waits for
// every origin's signals, greets every other rank, and starts its
// operations.
func (m *rmaModel) start(j *rmaJob) {
	m.j = j
	for t := range m.n {
		for o := range m.n {
			m.watch(t, o)
			m.count(t, o)
		}
	}
	for _, c := range m.clients {
		for t := range m.n {
			if t != c.me {
				c.notify(t)
			}
		}
		c.pump()
	}
}

func (m *rmaModel) violation(format string, args ...any) {
	if len(m.bad) < 20 {
		m.bad = append(m.bad, fmt.Sprintf(format, args...))
	}
}

// check counts a check, and records a violation if it failed.
func (m *rmaModel) check(ok bool, format string, args ...any) {
	m.stats.checks++
	if !ok {
		m.violation(format, args...)
	}
}

// record adds a result to the run's digest, which two runs of a seed
// must agree on.
func (m *rmaModel) record(origin int, seq int64, ws ...int64) {
	for _, w := range append([]int64{int64(origin), seq}, ws...) {
		m.digest = (m.digest ^ uint64(w)) * fnvPrime
	}
}

// opFailed judges an operation that ended with an error: nothing may fail
// without a crash, and with one only for it, naming it, once it happened.
func (m *rmaModel) opFailed(origin, target int, what string, err error) {
	now := m.j.r.loop.Elapsed()
	m.failed = append(m.failed, failedOp{origin, target, what, now, err})
	switch {
	case m.j.r.net.crashed[origin]:
	case m.crashed < 0:
		m.violation("rank %d: %s on rank %d failed at %v under faults it must survive: %v", origin, what, target, now, err)
	case !m.j.r.net.crashed[m.crashed]:
		m.violation("rank %d: %s on rank %d failed at %v, before rank %d crashed: %v", origin, what, target, now, m.crashed, err)
	case !namesRank(err, m.crashed):
		m.violation("rank %d: %s on rank %d failed with an error that does not name the crashed rank %d: %v", origin, what, target, m.crashed, err)
	}
}

// watch waits, on target t, for origin o's next version signal, and
// checks, at the instant the slot reaches it, that its data is in place.
func (m *rmaModel) watch(t, o int) {
	j := m.j
	j.waits++
	m.waiting[t][o][0] = true
	j.send(t, &window.Wait{ID: j.waits, Slot: o, Cmp: backend.SignalGE, Value: m.seen[t][o] + 1, Done: func(v uint64, err error) {
		m.waiting[t][o][0] = false
		if err != nil {
			m.opFailed(t, o, fmt.Sprintf("wait for a signal of rank %d", o), err)
			return
		}
		// Called by t's window actor as the slot reached v: the memory is
		// as it was then.
		mem := j.mem[t]
		base := m.lay.sig(o)
		got := wordsOf(mem[8*base : 8*(base+sigWords)])
		m.check(v > m.seen[t][o], "rank %d: slot %d went from %d back to %d", t, o, m.seen[t][o], v)
		m.check(got[0] >= int64(v), "rank %d saw rank %d's signal of version %d with version %d of its data in place: signal visible, data not", t, o, v, got[0])
		m.check(slices.Equal(got, sigData(o, t, got[0])), "rank %d: rank %d's signal region holds %v, no version it put (version %d's is %v)", t, o, got, got[0], sigData(o, t, got[0]))
		m.check(got[0] <= m.clients[o].views[t].version, "rank %d: rank %d's signal region holds version %d, beyond the %d it put", t, o, got[0], m.clients[o].views[t].version)
		m.seen[t][o] = v
		m.watch(t, o)
	}})
}

// count takes, on target t, origin o's notifications one by one.
func (m *rmaModel) count(t, o int) {
	j := m.j
	j.waits++
	m.waiting[t][o][1] = true
	j.send(t, &window.Wait{ID: j.waits, Slot: m.n + o, Consume: true, Done: func(_ uint64, err error) {
		m.waiting[t][o][1] = false
		if err != nil {
			m.opFailed(t, o, fmt.Sprintf("wait for a notification of rank %d", o), err)
			return
		}
		m.counted[t][o]++
		m.check(m.counted[t][o] <= m.clients[o].views[t].notified, "rank %d took %d notifications of rank %d, which sent %d", t, m.counted[t][o], o, m.clients[o].views[t].notified)
		m.count(t, o)
	}})
}

// pump issues operations while the depth allows, and a flush once the
// operations before it have ended.
func (c *rmaClient) pump() {
	for !c.syncing && c.left > 0 && c.inflight < c.depth {
		c.left--
		c.next()
	}
	if c.syncing && !c.flushing && c.inflight == 0 {
		c.flush()
	}
}

// span draws a run of words within a region of n.
func (c *rmaClient) span(n int) (first, count int) {
	first = c.rng.IntN(n)
	return first, 1 + c.rng.IntN(n-first)
}

// send issues op on target t; check runs if it succeeds, fail if not.
func (c *rmaClient) send(t int, what string, op *backend.WindowOp, check, fail func()) {
	m := c.m
	op.Peer = t
	op.DType = tensor.Int64
	c.inflight++
	m.stats.issued++
	op.Done = func(err error) {
		c.inflight--
		if err != nil {
			m.opFailed(c.me, t, what, err)
			if fail != nil {
				fail()
			}
		} else {
			m.stats.completed++
			if check != nil {
				check()
			}
		}
		c.pump()
	}
	m.j.send(c.me, op)
}

func (c *rmaClient) notify(t int) {
	c.views[t].notified++
	c.send(t, "notify", &backend.WindowOp{Code: backend.WindowSignal, Signal: backend.SignalAdd, Slot: c.m.n + c.me, Value: 1}, nil, nil)
}

// signalOf makes op carry a signal of the latest version to t: set to it,
// or add what it lacks.
func (c *rmaClient) signalOf(op *backend.WindowOp, t int) {
	v := &c.views[t]
	op.Slot = c.me
	if c.rng.IntN(2) == 0 {
		op.Signal, op.Value = backend.SignalSet, uint64(v.version)
	} else {
		op.Signal, op.Value = backend.SignalAdd, uint64(v.version-v.signalled)
	}
	v.signalled = v.version
}

// next issues one operation, drawn.
func (c *rmaClient) next() {
	m, lay := c.m, c.m.lay
	t := c.rng.IntN(m.n)
	v := &c.views[t]
	c.seq++
	seq, me := c.seq, c.me
	off := func(w int) uint64 { return uint64(8 * w) }
	switch k := c.rng.IntN(100); {
	case k < 14:
		a, n := c.span(privWords)
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = putValue(me, t, seq, a+i)
		}
		copy(v.priv[a:], vals)
		op := &backend.WindowOp{Code: backend.WindowPut, Offset: off(lay.priv(me) + a), Len: uint64(8 * n), Data: payload(vals...)}
		if m.sabotage == putLate {
			m.j.r.loop.At(m.j.r.loop.Elapsed()+20*time.Microsecond, func() { c.send(t, "put", op, nil, nil) })
			return
		}
		c.send(t, "put", op, nil, nil)
	case k < 26:
		a, n := c.span(privWords)
		want := slices.Clone(v.priv[a : a+n])
		res := make([]byte, 8*n)
		c.send(t, "get", &backend.WindowOp{Code: backend.WindowGet, Offset: off(lay.priv(me) + a), Len: uint64(8 * n), Result: res}, func() {
			got := wordsOf(res)
			m.record(me, seq, got...)
			m.check(slices.Equal(got, want), "rank %d: get #%d of its words %d-%d on rank %d read %x, want %x: what its own puts issued before left there", me, seq, a, a+n-1, t, got, want)
		}, nil)
	case k < 44:
		a, n := c.span(counterWords)
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = 1 + c.rng.Int64N(1000)
			m.added[t][a+i] += vals[i]
		}
		op := &backend.WindowOp{Code: backend.WindowAccumulate, Offset: off(lay.counter(a)), Len: uint64(8 * n), Data: payload(vals...), Reduce: reduce.Sum}
		if k < 36 {
			c.send(t, "accumulate", op, nil, nil)
			if m.sabotage == applyTwice {
				c.send(t, "accumulate", &backend.WindowOp{Code: backend.WindowAccumulate, Offset: op.Offset, Len: op.Len, Data: payload(vals...), Reduce: reduce.Sum}, nil, nil)
			}
			return
		}
		op.Code = backend.WindowGetAccumulate
		op.Result = make([]byte, 8*n)
		c.send(t, "get_accumulate", op, func() {
			got := wordsOf(op.Result)
			m.record(me, seq, got...)
			for i, old := range got {
				m.fetches[t][a+i] = append(m.fetches[t][a+i], fetched{me, seq, old, vals[i]})
			}
		}, nil)
	case k < 54:
		w := c.rng.IntN(counterWords)
		add := 1 + c.rng.Int64N(1000)
		m.added[t][w] += add
		res := make([]byte, 8)
		c.send(t, "fetch_and_op", &backend.WindowOp{Code: backend.WindowFetchAndOp, Offset: off(lay.counter(w)), Len: 8, Data: payload(add), Result: res, Reduce: reduce.Sum}, func() {
			old := word(res, 0)
			m.record(me, seq, old)
			m.fetches[t][w] = append(m.fetches[t][w], fetched{me, seq, old, add})
		}, nil)
	case k < 64:
		w := c.rng.IntN(swapWords)
		compare := v.swapSeen[w]
		if c.rng.IntN(4) == 0 {
			compare = 0 // most likely stale
		}
		nv := swapValue(me, seq)
		res := make([]byte, 8)
		c.send(t, "compare_and_swap", &backend.WindowOp{Code: backend.WindowCompareAndSwap, Offset: off(lay.swap(w)), Len: 8, Data: payload(nv, compare), Result: res}, func() {
			old := word(res, 0)
			m.record(me, seq, old)
			m.swaps[t][w] = append(m.swaps[t][w], swapped{me, seq, compare, nv, old})
			v.swapSeen[w] = old
			if old == compare {
				v.swapSeen[w] = nv
			}
		}, nil)
	case k < 80:
		v.version++
		op := &backend.WindowOp{Code: backend.WindowPut, Offset: off(lay.sig(me)), Len: 8 * sigWords, Data: payload(sigData(me, t, v.version)...)}
		what := "put of version " + fmt.Sprint(v.version)
		if k >= 70 && m.sabotage == signalEarly {
			sig := &backend.WindowOp{Code: backend.WindowSignal}
			c.signalOf(sig, t)
			c.send(t, "signal ahead of its data", sig, nil, nil)
		} else if k >= 70 {
			c.signalOf(op, t)
			what = "put_signal of version " + fmt.Sprint(v.version)
		}
		c.send(t, what, op, nil, nil)
	case k < 86:
		op := &backend.WindowOp{Code: backend.WindowSignal}
		c.signalOf(op, t)
		c.send(t, "signal of version "+fmt.Sprint(v.version), op, nil, nil)
	case k < 91:
		c.notify(t)
	case k < 95:
		want := sigData(me, t, v.version)
		res := make([]byte, 8*sigWords)
		c.send(t, "get of the signal region", &backend.WindowOp{Code: backend.WindowGet, Offset: off(lay.sig(me)), Len: 8 * sigWords, Result: res}, func() {
			got := wordsOf(res)
			m.record(me, seq, got...)
			m.check(slices.Equal(got, want), "rank %d: get #%d of its signal region on rank %d read %x, want version %d: %x", me, seq, t, got, want[0], want)
		}, nil)
	default:
		c.syncing, c.syncTo = true, t
	}
}

// flush runs alone: once it returns, every operation this rank issued to
// the target has been applied there, so the target's memory and slot
// show exactly what this rank left.
func (c *rmaClient) flush() {
	m, t, me := c.m, c.syncTo, c.me
	c.flushing = true
	done := func() {
		c.syncing, c.flushing = false, false
		c.pump()
	}
	c.send(t, "flush", &backend.WindowOp{Code: backend.WindowFlush}, func() {
		v := &c.views[t]
		mem := m.j.mem[t]
		priv := wordsOf(mem[8*m.lay.priv(me) : 8*(m.lay.priv(me)+privWords)])
		m.check(slices.Equal(priv, v.priv), "rank %d: after a flush of rank %d its words there are %x, want %x", me, t, priv, v.priv)
		sig := wordsOf(mem[8*m.lay.sig(me) : 8*(m.lay.sig(me)+sigWords)])
		m.check(slices.Equal(sig, sigData(me, t, v.version)), "rank %d: after a flush of rank %d its signal region is %x, want version %d", me, t, sig, v.version)
		if m.crashed >= 0 {
			done() // the target may be gone before the read below reaches it
			return
		}
		// The slot, read in the target's order: no other origin signals it.
		m.j.send(t, &window.Read{Slot: me, Done: func(got uint64, err error) {
			if err != nil {
				m.opFailed(me, t, "read of a signal slot", err)
			} else {
				m.check(got == uint64(v.signalled), "rank %d: after a flush of rank %d its slot there reads %d, want %d", me, t, got, v.signalled)
			}
			done()
		}})
	}, func() {
		c.syncing, c.flushing = false, false
	})
}

// final checks what the run left, once nothing moves: every operation
// ended, and each window holds what the model says.
func (m *rmaModel) final() {
	r := m.j.r
	for _, c := range m.clients {
		if r.net.crashed[c.me] {
			continue
		}
		if c.left > 0 || c.inflight > 0 || c.syncing {
			m.violation("rank %d: %d operations never issued and %d never ended (virtual time %v)", c.me, c.left, c.inflight, r.loop.Elapsed())
		}
	}
	if m.crashed >= 0 {
		return // what a failed operation did at its target is unknown
	}
	for t := range m.n {
		mem := m.j.mem[t]
		for o, c := range m.clients {
			v := &c.views[t]
			priv := wordsOf(mem[8*m.lay.priv(o) : 8*(m.lay.priv(o)+privWords)])
			m.check(slices.Equal(priv, v.priv), "rank %d: rank %d's words end as %x, want %x", t, o, priv, v.priv)
			sig := wordsOf(mem[8*m.lay.sig(o) : 8*(m.lay.sig(o)+sigWords)])
			m.check(slices.Equal(sig, sigData(o, t, v.version)), "rank %d: rank %d's signal region ends as %x, want version %d", t, o, sig, v.version)
			m.check(m.seen[t][o] == uint64(v.signalled), "rank %d: the last signal of rank %d it saw is version %d, want %d", t, o, m.seen[t][o], v.signalled)
			m.check(m.counted[t][o] == v.notified, "rank %d took %d notifications of rank %d, which sent %d", t, m.counted[t][o], o, v.notified)
		}
		for w := range counterWords {
			got := word(mem, m.lay.counter(w))
			m.check(got == m.added[t][w], "rank %d: counter %d ends at %d, want the sum of every contribution, %d", t, w, got, m.added[t][w])
			if msg := checkFetches(got, m.fetches[t][w]); msg != "" {
				m.violation("rank %d: counter %d: %s", t, w, msg)
			}
			m.stats.checks += int64(len(m.fetches[t][w]))
		}
		for w := range swapWords {
			got := word(mem, m.lay.swap(w))
			if msg := checkSwaps(got, m.swaps[t][w]); msg != "" {
				m.violation("rank %d: swap word %d: %s", t, w, msg)
			}
			m.stats.checks += int64(len(m.swaps[t][w]))
		}
	}
}

// checkFetches checks the values that fetching additions with positive
// addends read from one counter that ended at final: each applied once,
// atomically, the intervals [old, old+add) they cover are disjoint and
// below final, and each origin's, in issue order, rise.
func checkFetches(final int64, fs []fetched) string {
	sorted := slices.SortedFunc(slices.Values(fs), func(a, b fetched) int { return cmp.Compare(a.old, b.old) })
	var end int64
	for i, f := range sorted {
		if f.old < end {
			p := sorted[i-1]
			return fmt.Sprintf("rank %d's #%d read %d (adding %d) and rank %d's #%d read %d (adding %d): overlapping, so one saw the other half-applied or twice", p.origin, p.seq, p.old, p.add, f.origin, f.seq, f.old, f.add)
		}
		end = f.old + f.add
	}
	if end > final {
		return fmt.Sprintf("a fetch read %d and added to %d, beyond the final %d", sorted[len(sorted)-1].old, end, final)
	}
	last := map[int]fetched{}
	for _, f := range fs {
		if p, ok := last[f.origin]; ok && f.seq > p.seq && f.old <= p.old {
			return fmt.Sprintf("rank %d's #%d read %d after its #%d read %d: applied out of issue order", f.origin, f.seq, f.old, p.seq, p.old)
		}
		last[f.origin] = f
	}
	return ""
}

// checkSwaps checks the swaps on one word that ended at final: swapping
// in values never used before, the successful ones chain from 0 to final,
// each failed one read a value of the chain, and each origin's, in issue
// order, read values no earlier on it.
func checkSwaps(final int64, ss []swapped) string {
	next := map[int64]swapped{}
	for _, s := range ss {
		if s.old != s.cmp {
			continue
		}
		if p, dup := next[s.cmp]; dup {
			return fmt.Sprintf("rank %d's #%d and rank %d's #%d both swapped %d out", p.origin, p.seq, s.origin, s.seq, s.cmp)
		}
		next[s.cmp] = s
	}
	pos := map[int64]int{0: 0}
	cur := int64(0)
	for s, ok := next[cur]; ok; s, ok = next[cur] {
		cur = s.new
		if _, again := pos[cur]; again {
			return fmt.Sprintf("the swaps chain back to %d", cur)
		}
		pos[cur] = len(pos)
	}
	if len(pos)-1 != len(next) {
		return fmt.Sprintf("%d swaps succeeded, and only %d chain from 0", len(next), len(pos)-1)
	}
	if cur != final {
		return fmt.Sprintf("the word ends at %d, the swaps' chain at %d", final, cur)
	}
	type mark struct{ at, after int }
	last := map[int]mark{}
	for _, s := range slices.SortedFunc(slices.Values(ss), func(a, b swapped) int { return cmp.Compare(a.seq, b.seq) }) {
		p, ok := pos[s.old]
		if !ok {
			return fmt.Sprintf("rank %d's #%d read %d, which the word never held", s.origin, s.seq, s.old)
		}
		mk := mark{p, p}
		if s.old == s.cmp {
			mk.after = p + 1
		}
		if prev, seen := last[s.origin]; seen && mk.at < prev.after {
			return fmt.Sprintf("rank %d's #%d read %d, older than what its earlier swap left", s.origin, s.seq, s.old)
		}
		last[s.origin] = mk
	}
	return ""
}

// rmaResult is what one run of the workload did.
type rmaResult struct {
	hash, digest    uint64
	events          int64
	simTime         time.Duration
	redials, frames int64
	sentAgain       int // window frames handed to a connection again after a reconnect
	deliveredAgain  int // window frames a link received twice
	stats           rmaStats
	violations      []string
}

// runRMA runs the workload on a job set up by s, with a crash of rank
// crashed in the plan (or -1), and returns what it did.
func runRMA(s rmaSetup, w rmaWorkload, crashed int) (*rmaResult, *rmaModel, *rmaJob, error) {
	m := newRMAModel(&s, w, crashed)
	j, err := newRMAJob(s, m.start)
	if err != nil {
		return nil, nil, nil, err
	}
	j.run()
	m.final()
	res := &rmaResult{
		hash: j.r.trace.Hash(), digest: m.digest, events: j.r.trace.Events(), simTime: j.r.loop.Elapsed(),
		redials: j.r.net.redials, frames: j.r.net.frames, stats: m.stats,
		sentAgain: again(j.sent), deliveredAgain: again(j.delivered),
		violations: append(slices.Clone(j.bad), m.bad...),
	}
	if j.opened < s.ranks {
		res.violations = append(res.violations, fmt.Sprintf("only %d of %d windows opened", j.opened, s.ranks))
	}
	return res, m, j, nil
}

func (r *rmaResult) String() string {
	return fmt.Sprintf("hash %x, results %x, %d events, %v", r.hash, r.digest, r.events, r.simTime)
}
