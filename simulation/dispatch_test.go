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
