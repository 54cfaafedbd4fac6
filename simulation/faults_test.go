package simulation

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
)

// TestEveryKindRoundTrips: every kind prints as it parses, with each of
// its scopes, so that any drawn plan can be replayed from its printout.
func TestEveryKindRoundTrips(t *testing.T) {
	text := "crash:rank=1,at=1ms;restart:rank=2,at=1ms,for=2ms;pause:rank=3,at=0s,for=1ms;" +
		"loss:at=0s,for=1s,p=0.1;dup:rank=4,at=0s,for=1s,p=0.2;delay:link=1-5,at=0s,for=1s,by=10µs;" +
		"jitter:at=0s,for=1s,by=5µs;clog:link=2-3,at=1ms,for=1ms;drop:link=0-1,at=1ms;" +
		"flap:rank=6,at=1ms,for=2ms;partition:ranks=0-3+8,at=1ms,for=2ms;oneway:ranks=5,at=0s,for=1ms;" +
		"slow:rank=7,at=0s,for=1s,factor=3;skew:rank=1,at=0s,factor=2.5;corrupt:link=1-2,at=0s,for=1s,p=0.01;" +
		"store:at=0s,for=1ms"
	p, err := ParsePlan(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != len(Kinds()) {
		t.Fatalf("parsed %d faults, want one of each of %d kinds", len(p), len(Kinds()))
	}
	for i, k := range Kinds() {
		if p[i].Kind != k {
			t.Errorf("fault %d is %v, want %v", i, p[i].Kind, k)
		}
	}
	if p.String() != text {
		t.Errorf("printed\n%s\nwant\n%s", p, text)
	}
	q, err := ParsePlan(p.String())
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("reparsed as %v, %v", q, err)
	}
	if err := p.validate(9); err != nil {
		t.Error(err)
	}
}

func TestBadFaultsSayWhy(t *testing.T) {
	for bad, why := range map[string]string{
		"pause:rank=1,at=1ms":                       "needs for",
		"loss:at=0s,for=1ms":                        "needs p",
		"loss:at=0s,for=1ms,p=0.1,factor=2":         "takes no",
		"crash:link=1-2,at=1ms":                     "takes no",
		"delay:rank=1,link=1-2,at=0s,for=1s,by=1µs": "not both",
		"drop:link=3-3,at=0s":                       "two different ranks",
		"partition:ranks=2-1,at=0s,for=1ms":         "list of ranks",
		"crash:rank=1,at=1ms,at=2ms":                "twice",
	} {
		if _, err := ParsePlan(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an error saying %q", bad, err, why)
		}
	}
	for bad, why := range map[string]string{
		"crash:rank=9,at=0s":                   "out of range",
		"loss:at=0s,for=1ms,p=0.9":             "probability",
		"pause:rank=1,at=0s,for=0s":            "window of 0",
		"partition:ranks=0-8,at=0s,for=1ms":    "not all",
		"slow:link=1-12,at=0s,for=1s,factor=2": "out of range",
	} {
		p, err := ParsePlan(bad)
		if err != nil {
			t.Fatalf("%q: %v", bad, err)
		}
		cfg := config(algorithms.AllReduce, 9, 10, 1)
		cfg.Faults = p
		if _, err := Run(cfg); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: Run gave %v, want an error saying %q", bad, err, why)
		}
	}
}

// faultRun runs a 2-iteration all-reduce on 8 ranks of two nodes, first
// clean, then under plan, and returns both.
func faultRun(t *testing.T, plan string) (clean, faulty *Result) {
	t.Helper()
	cfg := config(algorithms.AllReduce, 8, 40000, 11)
	cfg.Topology = DGXH100(2)
	cfg.ChunkBytes = 16 << 10
	clean = mustRun(t, cfg)
	p, err := ParsePlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = p
	faulty = mustRun(t, cfg)
	if !faulty.OK() {
		t.Fatalf("%s: %v", plan, faulty.Violations)
	}
	return clean, faulty
}

func completedAll(t *testing.T, plan string, r *Result) {
	t.Helper()
	for i, o := range r.Ranks {
		if o.Completed != 2 || o.Err != nil {
			t.Errorf("%s: rank %d completed %d of 2: %v", plan, i, o.Completed, o.Err)
		}
	}
}

// TestHarmlessFaultsOnlyTakeTime: under loss, duplication, delay, jitter
// and slowness, every operation completes with the plain loop's result
// (the run checks it), and later than on a clean network.
func TestHarmlessFaultsOnlyTakeTime(t *testing.T) {
	for _, plan := range []string{
		"loss:at=0s,for=1s,p=0.3",
		"dup:at=0s,for=1s,p=0.5",
		"delay:rank=3,at=0s,for=1s,by=50µs",
		"jitter:at=0s,for=1s,by=20µs",
		"slow:link=0-4,at=0s,for=1s,factor=20",
		"slow:rank=5,at=0s,for=1s,factor=10",
	} {
		clean, faulty := faultRun(t, plan)
		completedAll(t, plan, faulty)
		if faulty.SimTime <= clean.SimTime {
			t.Errorf("%s: ended at %v, no later than the clean run's %v", plan, faulty.SimTime, clean.SimTime)
		}
	}
}

// TestStallsHoldFramesUntilTheyHeal: a pause, clog, one-way partition or
// store outage shorter than the timeout delays the operations past its
// end, and they complete.
func TestStallsHoldFramesUntilTheyHeal(t *testing.T) {
	const heal = 3 * time.Millisecond
	for _, plan := range []string{
		"pause:rank=2,at=10µs,for=3ms",
		"clog:rank=6,at=10µs,for=3ms",
		"oneway:ranks=0-3,at=10µs,for=3ms",
		"store:at=0s,for=3ms",
	} {
		_, faulty := faultRun(t, plan)
		completedAll(t, plan, faulty)
		if faulty.SimTime < heal {
			t.Errorf("%s: ended at %v, before the fault healed at %v", plan, faulty.SimTime, heal)
		}
	}
}

// TestResetsAreSurvived: a connection that resets, or cannot be made
// again for a while, reconnects within the links' restart budget, and
// sends again whatever the peer did not acknowledge, so every operation
// completes with the plain loop's result (the run checks it).
func TestResetsAreSurvived(t *testing.T) {
	for _, plan := range []string{
		"drop:link=0-1,at=5µs",
		"drop:at=5µs;drop:rank=2,at=20µs",
		"flap:link=2-3,at=5µs,for=100ms",
		"partition:ranks=0-3,at=5µs,for=200ms",
		"corrupt:rank=4,at=0s,for=1ms,p=0.2",
	} {
		_, faulty := faultRun(t, plan)
		completedAll(t, plan, faulty)
	}
}

// TestBreaksAreNamed: faults that stop ranks, cut links for longer than
// the links' restart budget or run a clock fast make the operations they
// touch fail, reported by or naming a rank in the fault's scope (the run
// checks it), and nothing hangs.
func TestBreaksAreNamed(t *testing.T) {
	for plan, named := range map[string][]int{
		"flap:link=2-3,at=5µs,for=5s":                    {2, 3},
		"partition:ranks=0-3,at=5µs,for=5s":              nil,
		"corrupt:rank=4,at=0s,for=5s,p=0.5":              nil,
		"restart:rank=5,at=5µs,for=10µs":                 {5},
		"store:at=0s,for=40s":                            nil,
		"skew:rank=1,at=0s,factor=1e6":                   {1},
		"crash:rank=7,at=5µs;pause:rank=0,at=0s,for=1ms": {7, 0},
	} {
		_, faulty := faultRun(t, plan)
		failed := 0
		for _, o := range faulty.Ranks {
			var oe *commerr.OpError
			if o.Err == nil || !errors.As(o.Err, &oe) {
				continue
			}
			failed++
			blamed := append(oe.Ranks, oe.Rank)
			if acc := (*commerr.Accusation)(nil); errors.As(o.Err, &acc) {
				blamed = append(blamed, acc.Accuser)
			}
			if named != nil && !containsAny(blamed, named) {
				t.Errorf("%s: rank %d's error blames %v, none of %v: %v", plan, oe.Rank, blamed, named, o.Err)
			}
		}
		if failed == 0 {
			t.Errorf("%s: no operation failed", plan)
		}
	}
}

func containsAny(have, want []int) bool {
	for _, r := range have {
		for _, w := range want {
			if r == w {
				return true
			}
		}
	}
	return false
}

// TestHarmlessFaultsExplainNoError: an error under harmless faults alone is
// a violation, however many ranks the faults touch.
func TestHarmlessFaultsExplainNoError(t *testing.T) {
	err := &commerr.OpError{Rank: 0, Ranks: []int{1}, Err: commerr.ErrTimeout}
	all := func(a, b int) bool { return true }
	harmless, _ := ParsePlan("loss:at=0s,for=1s,p=0.3;slow:at=0s,for=1s,factor=5")
	if harmless.explains(err, all, sameRank) {
		t.Error("harmless faults explain a timeout")
	}
	breaking, _ := ParsePlan("drop:link=1-2,at=0s")
	if !breaking.explains(err, all, sameRank) {
		t.Error("a dropped link does not explain a timeout naming its end")
	}
	if breaking.explains(&commerr.OpError{Ranks: []int{3}, Err: commerr.ErrPeerFailed}, all, sameRank) {
		t.Error("a dropped link 1-2 explains an error naming rank 3")
	}
	ranks, _ := ParsePlan("drop:rank=4,at=0s")
	only45 := func(a, b int) bool { return a+b == 9 }
	if !ranks.explains(&commerr.OpError{Ranks: []int{5}, Err: commerr.ErrPeerFailed}, only45, sameRank) ||
		ranks.explains(&commerr.OpError{Ranks: []int{6}, Err: commerr.ErrPeerFailed}, only45, sameRank) {
		t.Error("a fault on rank 4's links explains errors naming only its peers")
	}
}

// TestSilentRankIsDetected: a rank whose network freezes sends no
// heartbeat; the peers that wait on it declare it failed once it has been
// silent for the links' Silence (5 s), long before their 60 s timeout,
// and their errors name it.
func TestSilentRankIsDetected(t *testing.T) {
	cfg := config(algorithms.AllReduce, 8, 40000, 3)
	cfg.Topology = DGXH100(2)
	cfg.Timeout = time.Minute
	cfg.Faults = Plan{{Kind: Pause, Rank: 3, At: 5 * time.Microsecond, For: time.Hour}}
	res := mustRun(t, cfg)
	if !res.OK() {
		t.Fatal(res.Violations)
	}
	for r, o := range res.Ranks {
		var oe *commerr.OpError
		if r == 3 || !errors.As(o.Err, &oe) {
			continue
		}
		if !errors.Is(o.Err, commerr.ErrPeerFailed) || !slices.Contains(oe.Ranks, 3) {
			t.Errorf("rank %d: %v, want ErrPeerFailed naming rank 3", r, o.Err)
		}
	}
	if res.Ranks[0].Err == nil {
		t.Fatal("rank 0 completed with rank 3 frozen")
	}
	if res.SimTime < 5*time.Second || res.SimTime > 7*time.Second {
		t.Errorf("the last operation ended at %v, want within 2 s after the 5 s of silence", res.SimTime)
	}
}

// hungRank runs a 1 MiB all-reduce on 1,000 ranks (200 under -short)
// in which rank 17 hangs 20 µs in, configured further by set, and checks
// that every other rank fails with want naming rank 17 alone.
func hungRank(t *testing.T, want error, set func(*Config)) *Result {
	t.Helper()
	ranks := 1000
	if testing.Short() {
		ranks = 200
	}
	cfg := config(algorithms.AllReduce, ranks, 1<<18, 7)
	cfg.Topology = DGXH100(ranks / 8)
	cfg.Phantom = true
	cfg.Faults = Plan{{Kind: Pause, Rank: 17, At: 20 * time.Microsecond, For: time.Hour}}
	set(&cfg)
	res := mustRun(t, cfg)
	if !res.OK() {
		t.Fatal(res.Violations)
	}
	for r, o := range res.Ranks {
		var oe *commerr.OpError
		if r != 17 && (!errors.Is(o.Err, want) || !errors.As(o.Err, &oe) || !slices.Equal(oe.Ranks, []int{17})) {
			t.Fatalf("rank %d: %v, want %v naming rank 17", r, o.Err, want)
		}
	}
	return res
}

// TestHungRankIsNamedAtScale: the ranks that wait on the hung rank know
// its process joined (the connection is made), so its silence counts
// even before its first frame reached them, and every other rank names
// it two heartbeats later.
func TestHungRankIsNamedAtScale(t *testing.T) {
	res := hungRank(t, commerr.ErrPeerFailed, func(cfg *Config) {
		cfg.Timeout = time.Minute
		cfg.Heartbeat, cfg.Silence = time.Second, 2*time.Second
	})
	if res.SimTime < 2*time.Second || res.SimTime > 2100*time.Millisecond {
		t.Errorf("the last rank named it at %v, want two heartbeats (2 s) after the pause", res.SimTime)
	}
}

// TestHungRankIsNamedByTimeouts turns the silence watch off: every rank's
// all-reduce times out instead, and its probe, following the ranks that
// wait for one another, reaches the hung one, which never answers, and
// names it.
func TestHungRankIsNamedByTimeouts(t *testing.T) {
	hungRank(t, commerr.ErrTimeout, func(cfg *Config) {
		cfg.Timeout = 10 * time.Second
		cfg.Silence = -1
	})
}

// TestEveryWaitingLinkWatches: a collective that attaches to a link's
// plane before the link actor started still has the link watch the peer
// it waits for. Over seeds, which order what happens at the same virtual
// time, and rank counts, with one rank frozen from the start: every
// other rank that does not complete names the frozen rank as failed
// once it has been silent for the links' Silence, and none waits out its
// timeout.
func TestEveryWaitingLinkWatches(t *testing.T) {
	for seed := range uint64(100) {
		ranks := 2 + int(seed)%7
		cfg := config(algorithms.AllReduce, ranks, 1, seed)
		cfg.Iterations, cfg.Timeout = 1, time.Minute
		cfg.Faults = Plan{{Kind: Pause, Rank: int(seed) % ranks, At: 0, For: time.Hour}}
		res := mustRun(t, cfg)
		for r, o := range res.Ranks {
			if r == cfg.Faults[0].Rank || o.Err == nil {
				continue
			}
			if !errors.Is(o.Err, commerr.ErrPeerFailed) || !slices.Contains(ranksNamed(o.Err), cfg.Faults[0].Rank) {
				t.Errorf("seed %d, %d ranks, rank %d frozen: rank %d: %v, want a failure naming it", seed, ranks, cfg.Faults[0].Rank, r, o.Err)
			}
		}
	}
}
