package simulation

import (
	"testing"
	"time"

	"github.com/gocomms/gocomms/algorithms"
)

// TestDirectDispatchMatchesProtoactor: the simulator's own dispatch and
// protoactor's, the production one, deliver the same messages to the
// same actors in the same order at the same virtual times: a run's trace
// (the virtual time, receiving actor and message type of every message
// every actor receives, in order) and its outcome are the same under
// both, for seeds whose drawn faults crash, restart and reconnect ranks
// (links that fail are restarted by their supervisor), and for the
// agreement, the shrink and the one-sided exchange.
func TestDirectDispatchMatchesProtoactor(t *testing.T) {
	seeds := uint64(200)
	if testing.Short() {
		seeds = 40
	}
	var cfgs []Config
	for seed := range seeds {
		cfgs = append(cfgs, sweepConfig(seed))
	}
	agree := config(algorithms.AllReduce, 8, 64, 5)
	agree.Agree, agree.AfterShrink = true, 2
	agree.Faults = RandomPlan(5, 8, 2, 20*time.Microsecond, []FaultKind{Crash})
	windows := config(algorithms.AllReduce, 6, 16, 9)
	windows.Windows = true
	cfgs = append(cfgs, agree, windows)
	for i, cfg := range cfgs {
		direct := mustRun(t, cfg)
		cfg.Protoactor = true
		proto := mustRun(t, cfg)
		if direct.Hash != proto.Hash || direct.Events != proto.Events || direct.SimTime != proto.SimTime {
			t.Errorf("run %d (seed %d, %s): direct dispatch hash %x, %d events, %v; protoactor's %x, %d events, %v",
				i, cfg.Seed, cfg.Faults, direct.Hash, direct.Events, direct.SimTime, proto.Hash, proto.Events, proto.SimTime)
		}
		if direct.OK() != proto.OK() {
			t.Errorf("run %d (seed %d): direct dispatch violations %v, protoactor's %v", i, cfg.Seed, direct.Violations, proto.Violations)
		}
	}
}

// TestProgressChangesNothing: a run that reports its progress reports it
// (virtual time, events and frames that only grow) and keeps the trace
// of the same run without reports.
func TestProgressChangesNothing(t *testing.T) {
	cfg := config(algorithms.AllReduce, 512, 1<<12, 3)
	cfg.Topology = DGXH100(64)
	quiet := mustRun(t, cfg)
	var reports []Progress
	cfg.Progress, cfg.ProgressEvery = func(p Progress) { reports = append(reports, p) }, time.Nanosecond
	told := mustRun(t, cfg)
	if told.Hash != quiet.Hash || told.Events != quiet.Events {
		t.Errorf("reporting changed the run: hash %x, %d events; without %x, %d", told.Hash, told.Events, quiet.Hash, quiet.Events)
	}
	if len(reports) == 0 {
		t.Fatalf("%d events and no report", told.Events)
	}
	for i, p := range reports {
		if p.Events > told.Events || p.Frames > told.Frames || i > 0 && (p.Events <= reports[i-1].Events || p.SimTime < reports[i-1].SimTime) {
			t.Errorf("report %d: %+v after %+v, of a run of %d events, %d frames", i, p, reports[max(i-1, 0)], told.Events, told.Frames)
		}
	}
}

// TestProgressPhases: a run's reports say what it does, in order: building
// its ranks (how many so far), then making links at virtual time zero,
// then simulating.
func TestProgressPhases(t *testing.T) {
	cfg := config(algorithms.AllReduce, 2*tickEvery, 16, 1)
	cfg.Topology, cfg.Iterations, cfg.Phantom = DGXH100(2*tickEvery/8), 1, true
	var reports []Progress
	cfg.Progress, cfg.ProgressEvery = func(p Progress) { reports = append(reports, p) }, time.Nanosecond
	mustRun(t, cfg)
	order := map[Phase]int{Building: 0, Linking: 1, Simulating: 2}
	seen := map[Phase]bool{}
	for i, p := range reports {
		seen[p.Phase] = true
		if i > 0 && order[p.Phase] < order[reports[i-1].Phase] {
			t.Errorf("report %d says %q after %q", i, p.Phase, reports[i-1].Phase)
		}
		switch {
		case p.Phase == Building && (p.Built == 0 || p.Built >= cfg.Ranks || p.SimTime != 0):
			t.Errorf("report %d: building with %d of %d ranks built, at %v", i, p.Built, cfg.Ranks, p.SimTime)
		case p.Phase == Linking && (p.Built != cfg.Ranks || p.SimTime != 0):
			t.Errorf("report %d: making links with %d of %d ranks built, at %v", i, p.Built, cfg.Ranks, p.SimTime)
		case p.Phase == Simulating && p.SimTime == 0:
			t.Errorf("report %d: simulating at virtual time zero", i)
		}
	}
	for _, phase := range []Phase{Building, Linking, Simulating} {
		if !seen[phase] {
			t.Errorf("no report says %q, of %d reports", phase, len(reports))
		}
	}
}
