package simulation

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// The one-sided operations' tests run the real rank, link and window
// actors on the simulator (rma_harness_test.go) under a workload whose
// every result a reference model checks (rma_model_test.go). Their
// default sizes keep `go test ./simulation` short; these variables run
// more, as counts ("5000") or spans of seeds ("17-17" replays one):
//
//	GOCOMMS_SIM_RMA_SEEDS      TestWindowModelSweep and TestWindowCrashRevokes
//	GOCOMMS_SIM_ATOMICS_SEEDS  TestAtomicsLinearizable

const (
	rmaSeedsEnv     = "GOCOMMS_SIM_RMA_SEEDS"
	atomicsSeedsEnv = "GOCOMMS_SIM_ATOMICS_SEEDS"
)

// rmaSurvivable are the faults a window must ride out: frames lost and
// sent again, repeated, delayed, reordered across connections, slowed,
// held (clogs, one-way partitions, pauses, a store outage, all shorter
// than any timeout here), clocks run fast or slow, and connections reset
// (drops, flaps, partitions, corruption) for less than the links' restart
// budget, after which the links reconnect and send again what the peer
// did not acknowledge. Crashes and restarts are TestWindowCrashRevokes's.
// The simulated network repeats a frame by charging the wire twice (TCP
// discards the copy); a frame that reaches a link twice can only come
// from a link sending it again after a reconnect, which the sweep counts.
var rmaSurvivable = []FaultKind{
	Drop, Flap, Partition, Corrupt, Loss, Duplicate, Delay, Jitter, Slow,
	Clog, OneWay, Pause, StoreOutage, Skew,
}

// rmaWithin is how long into a sweep's run its faults start, and at most
// how long they last: about as long as the workload runs without them.
const rmaWithin = 100 * time.Microsecond

// rmaSweepSetup is seed's job in the sweep: its size, shape, jitter,
// workload and faults all follow from the seed.
func rmaSweepSetup(seed uint64) (rmaSetup, rmaWorkload) {
	ranks := []int{4, 6, 8, 5}[seed%4]
	nodes := 1
	if ranks%2 == 0 && seed/4%2 == 1 {
		nodes = 2
	}
	s := rmaSetup{
		ranks: ranks, topo: DGXH100(nodes), seed: seed,
		jitter: time.Duration(seed/8%4) * 2 * time.Microsecond,
		limit:  10 * time.Second,
	}
	w := rmaWorkload{ops: 40 + int(seed%41), depth: 1 + int(seed/3%8)}
	s.plan = RandomPlan(seed, ranks, 1+int(seed%3), rmaWithin, rmaSurvivable)
	return s, w
}

func describeRMA(s rmaSetup, w rmaWorkload) string {
	return fmt.Sprintf("%d ranks on %d nodes, %d operations a rank %d deep, jitter %v, faults %q", s.ranks, s.topo.Nodes, w.ops, w.depth, s.jitter, s.plan)
}

func replay(test string, env string, seed uint64) string {
	return fmt.Sprintf("replay: %s=%d-%d go test ./simulation -run '^%s$' -v", env, seed, seed, test)
}

// TestWindowModelSweep runs the reference model's workload over 300
// seeds (40 with -short; GOCOMMS_SIM_RMA_SEEDS for more): every rank
// issues a drawn mix of puts, gets, accumulates, get-accumulates,
// fetch-and-adds, compare-and-swaps, puts with signal, signals,
// notifications and flushes to every rank, pipelined, under drawn link
// faults it must survive. Every operation must complete, and every
// result, every signal a waiter sees and every window's final contents
// must be what the model says.
func TestWindowModelSweep(t *testing.T) {
	n := uint64(300)
	if testing.Short() {
		n = 40
	}
	from, to := seedRange(t, rmaSeedsEnv, n)
	var issued, checks, redials, frames int64
	var sentAgain, deliveredAgain, failed int
	start := time.Now()
	for seed := from; seed < to; seed++ {
		s, w := rmaSweepSetup(seed)
		res, _, j, err := runRMA(s, w, -1)
		if err != nil {
			t.Fatal(err)
		}
		j.close()
		issued += res.stats.issued
		checks += res.stats.checks
		redials += res.redials
		frames += res.frames
		sentAgain += res.sentAgain
		deliveredAgain += res.deliveredAgain
		if len(res.violations) > 0 {
			failed++
			t.Errorf("seed %d: %s: %d violations:\n\t%s\n%s", seed, describeRMA(s, w), len(res.violations), strings.Join(res.violations, "\n\t"), replay("TestWindowModelSweep", rmaSeedsEnv, seed))
			if failed == 5 {
				t.Fatal("stopping after 5 failing seeds")
			}
		}
	}
	if seeds := int64(to - from); seeds >= 20 && (redials < seeds/4 || sentAgain == 0) {
		t.Errorf("%d seeds reconnected %d times and sent %d frames again: the faults missed the operations", seeds, redials, sentAgain)
	}
	t.Logf("%d seeds in %v: %d operations, %d checks, %d frames, %d reconnections, %d window frames sent again after one, %d delivered twice to a link",
		to-from, time.Since(start).Round(time.Millisecond), issued, checks, frames, redials, sentAgain, deliveredAgain)
}

// TestWindowModelHasTeeth: the model is only worth its silence if it
// speaks up. Ranks that break a rule on purpose (an accumulate applied
// twice, a signal ahead of its data, a put overtaken by the operations
// issued after it) must each make it report the rule broken.
func TestWindowModelHasTeeth(t *testing.T) {
	for _, c := range []struct {
		sabotage sabotage
		want     []string
	}{
		{applyTwice, []string{"want the sum of every contribution"}},
		{signalEarly, []string{"signal visible, data not"}},
		{putLate, []string{"what its own puts issued before left there", "after a flush of rank"}},
	} {
		caught := 0
		for seed := range uint64(5) {
			s, w := rmaSweepSetup(seed)
			s.plan = nil
			w.sabotage = c.sabotage
			res, _, j, err := runRMA(s, w, -1)
			if err != nil {
				t.Fatal(err)
			}
			j.close()
			if slices.ContainsFunc(res.violations, func(v string) bool {
				return slices.ContainsFunc(c.want, func(want string) bool { return strings.Contains(v, want) })
			}) {
				caught++
			}
		}
		if caught < 5 {
			t.Errorf("sabotage %d: caught in %d of 5 seeds, want a violation saying one of %q each time", c.sabotage, caught, c.want)
		}
	}
}

// TestWindowCheckersRejectBadHistories: the checks of fetched values and
// swap chains reject what no atomic, exactly-once, in-order window could
// have produced, and accept what one could.
func TestWindowCheckersRejectBadHistories(t *testing.T) {
	good := []fetched{{0, 1, 0, 5}, {1, 1, 5, 2}, {0, 2, 9, 1}} // the gap 7-8 is an accumulate's
	if msg := checkFetches(10, good); msg != "" {
		t.Errorf("a possible history rejected: %s", msg)
	}
	for name, c := range map[string]struct {
		final int64
		fs    []fetched
	}{
		"two reads of one value":  {10, []fetched{{0, 1, 0, 5}, {1, 1, 0, 2}}},
		"overlapping intervals":   {10, []fetched{{0, 1, 0, 5}, {1, 1, 4, 2}}},
		"beyond the final value":  {6, []fetched{{0, 1, 0, 5}, {1, 1, 5, 2}}},
		"one origin out of order": {10, []fetched{{0, 1, 5, 2}, {0, 2, 0, 5}}},
	} {
		if checkFetches(c.final, c.fs) == "" {
			t.Errorf("fetches: %s accepted", name)
		}
	}
	chain := []swapped{{0, 1, 0, 11, 0}, {1, 1, 0, 21, 11}, {1, 2, 11, 22, 11}, {0, 2, 22, 12, 22}}
	if msg := checkSwaps(12, chain); msg != "" {
		t.Errorf("a possible swap history rejected: %s", msg)
	}
	for name, c := range map[string]struct {
		final int64
		ss    []swapped
	}{
		"two swaps out of one value": {21, []swapped{{0, 1, 0, 11, 0}, {1, 1, 0, 21, 0}}},
		"a value never held":         {11, []swapped{{0, 1, 0, 11, 0}, {1, 1, 0, 21, 7}}},
		"the wrong final value":      {0, []swapped{{0, 1, 0, 11, 0}}},
		"one origin going back":      {21, []swapped{{0, 1, 0, 11, 0}, {1, 1, 11, 21, 11}, {0, 2, 5, 12, 0}}},
	} {
		if checkSwaps(c.final, c.ss) == "" {
			t.Errorf("swaps: %s accepted", name)
		}
	}
}

// TestWindowSameSeedSameRun: a window workload is a function of its seed,
// faults and crashes included: two runs of a seed give one trace hash,
// one count of events, one end time and the same result for every
// operation; the thread count changes none of it; and the seed matters.
func TestWindowSameSeedSameRun(t *testing.T) {
	seeds := uint64(10)
	if testing.Short() {
		seeds = 3
	}
	hashes := map[uint64]bool{}
	for seed := range seeds {
		s, w := rmaSweepSetup(seed)
		a, _, ja, err := runRMA(s, w, -1)
		if err != nil {
			t.Fatal(err)
		}
		ja.close()
		b, _, jb, _ := runRMA(s, w, -1)
		jb.close()
		if a.String() != b.String() || a.stats != b.stats || a.sentAgain != b.sentAgain {
			t.Errorf("seed %d (%s): two runs differ:\n\t%v, %+v\n\t%v, %+v", seed, describeRMA(s, w), a, a.stats, b, b.stats)
		}
		hashes[a.hash] = true
	}
	if len(hashes) < int(seeds)-1 {
		t.Errorf("%d seeds gave %d distinct traces", seeds, len(hashes))
	}

	// Crashes, and the 64-rank atomics with their recorded histories.
	s, w := crashSetup(3)
	a, _, ja, _ := runRMA(s, w, s.plan[0].Rank)
	ja.close()
	b, _, jb, _ := runRMA(s, w, s.plan[0].Rank)
	jb.close()
	if a.String() != b.String() {
		t.Errorf("a crash run replays differently: %v, then %v", a, b)
	}
	as, aw := atomicsSetup(1)
	ha, err := runAtomics(as, aw)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := runAtomics(as, aw)
	if ha.res.String() != hb.res.String() || fmt.Sprint(ha.histories) != fmt.Sprint(hb.histories) {
		t.Errorf("the atomics replay differently: %v, then %v", ha.res, hb.res)
	}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var prints []string
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		s, w := rmaSweepSetup(7)
		r, _, j, _ := runRMA(s, w, -1)
		j.close()
		prints = append(prints, r.String())
	}
	if prints[0] != prints[1] || prints[1] != prints[2] {
		t.Errorf("GOMAXPROCS 1, 2 and 4 give %q", prints)
	}
}

// crashSetup is seed's job in the crash sweep: the model's workload, with
// one rank crashing while it runs; on odd seeds a new process that knows
// no communicator takes its place 50µs later, answering dials, and
// resetting them, instead of refusing them.
func crashSetup(seed uint64) (rmaSetup, rmaWorkload) {
	s, w := rmaSweepSetup(seed)
	f := Fault{Kind: Crash, Rank: int(seed / 3 % uint64(s.ranks)), At: time.Microsecond + time.Duration(seed*7919%uint64(rmaWithin))}
	if seed%2 == 1 {
		f.Kind, f.For = Restart, 50*time.Microsecond
	}
	s.plan = Plan{f}
	return s, w
}

// peerFailedRE finds the ranks an error says failed.
var peerFailedRE = regexp.MustCompile(`peer failed: rank (\d+)`)

// blamed lists the ranks err says failed, in order; none for no error.
func blamed(err error) []int {
	if err == nil {
		return nil
	}
	var ranks []int
	for _, m := range peerFailedRE.FindAllStringSubmatch(err.Error(), -1) {
		r, _ := strconv.Atoi(m[1])
		ranks = append(ranks, r)
	}
	return ranks
}

// blamesOnly reports whether err is a peer failure that names rank r and
// says no other rank failed.
func blamesOnly(err error, r int) bool {
	return namesRank(err, r) && !slices.ContainsFunc(blamed(err), func(b int) bool { return b != r })
}

// TestWindowCrashRevokes runs the model's workload over 60 seeds (10
// with -short; GOCOMMS_SIM_RMA_SEEDS for more) in which one rank crashes,
// or crashes and restarts, while every rank is busy with every window,
// each rank having talked to every other first. On every survivor the window is revoked: what
// waited for a reply or a signal fails, and so does every later
// operation, with ErrPeerFailed naming the crashed rank and no other;
// nothing fails before the crash, nothing hangs, and the survivors are
// done within a second of virtual time. What completed is still checked
// by the model as it completes.
func TestWindowCrashRevokes(t *testing.T) {
	n := uint64(60)
	if testing.Short() {
		n = 10
	}
	from, to := seedRange(t, rmaSeedsEnv, n)
	var revoked, probes int
	var slowest time.Duration
	for seed := from; seed < to; seed++ {
		s, w := crashSetup(seed)
		crashed, at := s.plan[0].Rank, s.plan[0].At
		res, m, j, err := runRMA(s, w, crashed)
		if err != nil {
			t.Fatal(err)
		}
		bad := res.violations
		var last time.Duration
		for _, f := range m.failed {
			if f.origin == crashed {
				continue
			}
			revoked++
			last = max(last, f.at)
			if !blamesOnly(f.err, crashed) {
				bad = append(bad, fmt.Sprintf("rank %d: %s on rank %d failed blaming ranks %v, not only the crashed rank %d: %v", f.origin, f.what, f.target, blamed(f.err), crashed, f.err))
			}
		}
		slowest = max(slowest, last-at)
		if last > at+time.Second {
			bad = append(bad, fmt.Sprintf("the survivors' operations failed until %v, more than a second after the crash at %v", last, at))
		}
		for tt := range s.ranks {
			for o := range s.ranks {
				if tt != crashed && (m.waiting[tt][o][0] || m.waiting[tt][o][1]) {
					bad = append(bad, fmt.Sprintf("rank %d: a wait for rank %d's signals is still waiting at %v, after rank %d crashed at %v", tt, o, j.r.loop.Elapsed(), crashed, at))
				}
			}
		}
		// Once it is over, every survivor's window refuses everything: a
		// get from the crashed rank, one from a survivor, and a wait.
		ends := map[string]error{}
		for i := range s.ranks {
			if i == crashed {
				continue
			}
			live := (i + 1) % s.ranks
			if live == crashed {
				live = (live + 1) % s.ranks
			}
			for _, peer := range []int{crashed, live} {
				name := fmt.Sprintf("rank %d: a get from rank %d after the crash", i, peer)
				j.send(i, &backend.WindowOp{Code: backend.WindowGet, Peer: peer, Len: 8, DType: tensor.Int64, Result: make([]byte, 8), Done: func(err error) { ends[name] = err }})
			}
			name := fmt.Sprintf("rank %d: a wait after the crash", i)
			j.waits++
			j.send(i, &window.Wait{ID: j.waits, Slot: 0, Cmp: backend.SignalGE, Value: 1 << 60, Done: func(_ uint64, err error) { ends[name] = err }})
			probes += 3
		}
		j.run()
		j.close()
		if len(ends) != 3*(s.ranks-1) {
			bad = append(bad, fmt.Sprintf("%d of %d operations after the crash ended", len(ends), 3*(s.ranks-1)))
		}
		for name, err := range ends {
			if !blamesOnly(err, crashed) {
				bad = append(bad, fmt.Sprintf("%s ended with %v, want the window revoked naming rank %d", name, err, crashed))
			}
		}
		if len(bad) > 0 {
			t.Errorf("seed %d: %s, rank %d crashing at %v:\n\t%s\n%s", seed, describeRMA(s, w), crashed, at, strings.Join(bad, "\n\t"), replay("TestWindowCrashRevokes", rmaSeedsEnv, seed))
		}
	}
	t.Logf("%d seeds: %d operations and waits failed on survivors, naming the crashed rank, the last %v after the crash; %d refused after it", to-from, revoked, slowest, probes)
}

// The tests below hold how revocation reaches a window from every
// direction: its own link to the failed peer (link.Failed), its rank
// breaking (the failure flood, a link its supervisor gave up on), and its
// links' silence watch. Each runs the smallest job that shows it.

// TestWindowRevokedWithoutLinkToFailedRank: rank 2 crashes before it
// ever signals rank 0, which waits for its signal. Rank 1, which talked
// to rank 2, finds it failed and tells rank 0's rank actor (the failure
// flood); rank 0's window has no link to rank 2, and hears of it from its
// rank: the wait fails with ErrPeerFailed naming rank 2.
func TestWindowRevokedWithoutLinkToFailedRank(t *testing.T) {
	s := rmaSetup{ranks: 3, topo: DGXH100(1), seed: 1, bytes: 64, slots: 3, limit: 10 * time.Second,
		plan: Plan{{Kind: Crash, Rank: 2, At: 50 * time.Microsecond}}}
	var ended bool
	var waitErr error
	j, err := newRMAJob(s, func(j *rmaJob) {
		// 2 talks to 1, 1 to 0; 0 waits for a signal from 2.
		j.send(2, &backend.WindowOp{Code: backend.WindowPut, Peer: 1, Len: 8, DType: tensor.Int64, Data: payload(7), Done: func(error) {}})
		j.send(1, &backend.WindowOp{Code: backend.WindowSignal, Peer: 0, Signal: backend.SignalAdd, Slot: 1, Value: 1, Done: func(error) {}})
		j.send(0, &window.Wait{ID: 1, Slot: 2, Cmp: backend.SignalGE, Value: 1, Done: func(_ uint64, err error) { ended, waitErr = true, err }})
	})
	if err != nil {
		t.Fatal(err)
	}
	j.run()
	j.close()
	if !ended {
		t.Fatalf("rank 0's wait for rank 2's signal never ended (virtual time %v); rank 2 crashed at 50µs", j.r.loop.Elapsed())
	}
	if !blamesOnly(waitErr, 2) {
		t.Fatalf("rank 0's wait ended with %v, want ErrPeerFailed naming rank 2 alone", waitErr)
	}
}

// TestWindowRevokedWhenLinkGivesUp: a partition cuts rank 2 off for 20 s,
// longer than the links' restart budget (about 600 ms). A link that its
// supervisor stops after the budget sends no link.Failed, but its rank
// marks rank 2 failed and tells its windows: a fetch-and-op waiting for
// rank 2's reply, a get, and a wait for rank 2's signal all fail with
// ErrPeerFailed naming rank 2 once the links give up.
func TestWindowRevokedWhenLinkGivesUp(t *testing.T) {
	s := rmaSetup{ranks: 3, topo: DGXH100(1), seed: 1, bytes: 64, slots: 3, limit: 30 * time.Second,
		plan: Plan{{Kind: Partition, Ranks: []int{2}, At: 50 * time.Microsecond, For: 20 * time.Second}}}
	ends := map[string]error{}
	j, err := newRMAJob(s, func(j *rmaJob) {
		for o := range 3 { // every pair has a link
			for peer := range 3 {
				if o != peer {
					j.send(o, &backend.WindowOp{Code: backend.WindowSignal, Peer: peer, Signal: backend.SignalAdd, Slot: o, Value: 1, Done: func(error) {}})
				}
			}
		}
		j.send(0, &window.Wait{ID: 1, Slot: 2, Cmp: backend.SignalGE, Value: 2, Done: func(_ uint64, err error) { ends["rank 0's wait for rank 2's signal"] = err }})
		j.r.loop.At(100*time.Microsecond, func() {
			j.send(0, &backend.WindowOp{Code: backend.WindowGet, Peer: 2, Len: 8, DType: tensor.Int64, Result: make([]byte, 8),
				Done: func(err error) { ends["rank 0's get from rank 2"] = err }})
			j.send(1, &backend.WindowOp{Code: backend.WindowFetchAndOp, Peer: 2, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum, Data: payload(1), Result: make([]byte, 8),
				Done: func(err error) { ends["rank 1's fetch-and-op on rank 2"] = err }})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	j.run()
	j.close()
	for _, name := range []string{"rank 0's wait for rank 2's signal", "rank 0's get from rank 2", "rank 1's fetch-and-op on rank 2"} {
		err, ok := ends[name]
		switch {
		case !ok:
			t.Errorf("%s never ended (the loop went idle at %v, the partition lasts 20 s)", name, j.r.loop.Elapsed())
		case !namesRank(err, 2):
			t.Errorf("%s ended with %v, want ErrPeerFailed naming rank 2", name, err)
		}
	}
}

// TestWindowRevocationBlamesTheFailedRank: as in
// TestWindowRevokedWithoutLinkToFailedRank, rank 2 crashes and rank 0's
// rank hears of it from rank 1. When rank 0 next gets from rank 1, which
// is alive, the get and the wait fail with an error that says rank 2
// failed, and no other: not rank 1, the get's target.
func TestWindowRevocationBlamesTheFailedRank(t *testing.T) {
	s := rmaSetup{ranks: 3, topo: DGXH100(1), seed: 1, bytes: 64, slots: 3, limit: 10 * time.Second,
		plan: Plan{{Kind: Crash, Rank: 2, At: 50 * time.Microsecond}}}
	var getErr, waitErr error
	j, err := newRMAJob(s, func(j *rmaJob) {
		j.send(2, &backend.WindowOp{Code: backend.WindowPut, Peer: 1, Len: 8, DType: tensor.Int64, Data: payload(7), Done: func(error) {}})
		j.send(1, &backend.WindowOp{Code: backend.WindowSignal, Peer: 0, Signal: backend.SignalAdd, Slot: 1, Value: 1, Done: func(error) {}})
		j.send(0, &window.Wait{ID: 1, Slot: 2, Cmp: backend.SignalGE, Value: 1, Done: func(_ uint64, err error) { waitErr = err }})
	})
	if err != nil {
		t.Fatal(err)
	}
	j.run() // rank 1 and rank 0's rank know rank 2 failed
	j.send(0, &backend.WindowOp{Code: backend.WindowGet, Peer: 1, Len: 8, DType: tensor.Int64, Result: make([]byte, 8), Done: func(err error) { getErr = err }})
	j.run()
	j.close()
	for what, err := range map[string]error{"rank 0's get from rank 1": getErr, "rank 0's wait for rank 2's signal": waitErr} {
		if !blamesOnly(err, 2) || len(blamed(err)) != 1 {
			t.Errorf("%s ended with %v, which blames ranks %v: want ErrPeerFailed blaming rank 2 alone", what, err, blamed(err))
		}
	}
}

// TestWindowHungPeerIsDetected: rank 2 hangs (its network pauses) for an
// hour while ranks 0 and 1 wait for its replies. A window that waits for
// replies has its links watch the peer (link.Expect), so the get and the
// fetch-and-op fail with ErrPeerFailed naming rank 2 after the links'
// silence (5 s), as a collective's would (TestSilentRankIsDetected).
func TestWindowHungPeerIsDetected(t *testing.T) {
	s := rmaSetup{ranks: 3, topo: DGXH100(1), seed: 1, bytes: 64, slots: 3, limit: 2 * time.Hour,
		plan: Plan{{Kind: Pause, Rank: 2, At: 50 * time.Microsecond, For: time.Hour}}}
	type end struct {
		at  time.Duration
		err error
	}
	ends := map[string]end{}
	var j *rmaJob
	record := func(name string) func(error) {
		return func(err error) { ends[name] = end{j.r.loop.Elapsed(), err} }
	}
	j, err := newRMAJob(s, func(j *rmaJob) {
		j.r.loop.At(100*time.Microsecond, func() {
			j.send(0, &backend.WindowOp{Code: backend.WindowGet, Peer: 2, Len: 8, DType: tensor.Int64, Result: make([]byte, 8), Done: record("rank 0's get from rank 2")})
			j.send(1, &backend.WindowOp{Code: backend.WindowFetchAndOp, Peer: 2, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum, Data: payload(1), Result: make([]byte, 8),
				Done: record("rank 1's fetch-and-op on rank 2")})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	j.run()
	j.close()
	for _, name := range []string{"rank 0's get from rank 2", "rank 1's fetch-and-op on rank 2"} {
		e, ok := ends[name]
		switch {
		case !ok:
			t.Errorf("%s never ended", name)
		case e.at > 10*time.Second || !namesRank(e.err, 2):
			t.Errorf("%s ended at %v with %v: want ErrPeerFailed naming rank 2 within 10 s", name, e.at, e.err)
		}
	}
}
