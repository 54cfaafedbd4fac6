package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/simulation"
)

// simJSON runs `commnode sim` with args and --json, and returns its exit
// status and report.
func simJSON(t *testing.T, args ...string) (int, simReport) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(append(append([]string{"sim"}, args...), "--json"), &out, &errs)
	var rep simReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: exit %d, %v: %s%s", args, code, err, out.String(), errs.String())
	}
	return code, rep
}

// replayArgs splits a printed replay command into `commnode sim`'s
// arguments: fields, the quoted ones unquoted.
func replayArgs(t *testing.T, cmd string) []string {
	t.Helper()
	fields := strings.Fields(cmd)
	if len(fields) < 2 || fields[0] != "commnode" || fields[1] != "sim" {
		t.Fatalf("replay %q is not a commnode sim command", cmd)
	}
	args := fields[2:]
	for i, a := range args {
		if strings.HasPrefix(a, `"`) {
			u, err := strconv.Unquote(a)
			if err != nil {
				t.Fatalf("replay %q: %v", cmd, err)
			}
			args[i] = u
		}
	}
	return args
}

func faultCount(t *testing.T, plan string) int {
	t.Helper()
	p, err := simulation.ParsePlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	return len(p)
}

// TestSimChaosReplays: --chaos adds faults drawn from the seed to the
// --faults plan; the printed replay writes them out instead of --chaos,
// names the build, and runs to the same trace.
func TestSimChaosReplays(t *testing.T) {
	const base = "delay:at=0s,for=10µs,by=1µs"
	args := []string{"--ranks", "6", "--nodes", "2", "--bytes", "64K", "--iters", "2", "--faults", base, "--chaos", "5", "--within", "40us", "--seed", "4"}
	_, rep := simJSON(t, args...)
	if n := faultCount(t, rep.Faults); n != 6 || !strings.HasPrefix(rep.Faults, base+";") {
		t.Fatalf("plan %q: want %q and 5 drawn faults", rep.Faults, base)
	}
	if strings.Contains(rep.Replay, "--chaos") || !strings.Contains(rep.Replay, strconv.Quote(rep.Faults)) {
		t.Errorf("replay %q does not write out the plan %q", rep.Replay, rep.Faults)
	}
	if rep.Version == "" {
		t.Error("no version")
	}
	_, again := simJSON(t, replayArgs(t, rep.Replay)...)
	if again.TraceHash != rep.TraceHash || again.Faults != rep.Faults || again.Replay != rep.Replay {
		t.Errorf("replay ran %s under %q, want %s under %q", again.TraceHash, again.Faults, rep.TraceHash, rep.Faults)
	}
	if _, other := simJSON(t, append(args, "--seed", "5")...); other.Faults == rep.Faults {
		t.Errorf("seeds 4 and 5 drew the same plan %q", rep.Faults)
	}

	var out, errs bytes.Buffer
	run(append([]string{"sim"}, args...), &out, &errs)
	for _, want := range []string{"\nreplay    " + rep.Replay + "\n", "\nversion   " + rep.Version + "\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}

// failing is a run that breaks an invariant whatever its faults: a
// 1µs timeout is shorter than the operation, so ranks time out where no
// fault explains it.
var failing = []string{"--ranks", "8", "--bytes", "64K", "--iters", "2", "--timeout", "1us", "--within", "20us",
	"--faults", "crash:rank=5,at=5us", "--chaos", "6", "--kinds", "loss,dup,delay,jitter,slow"}

// TestSimShrink: --shrink cuts a failing run's plan down, and prints a
// replay of the smaller plan that still fails.
func TestSimShrink(t *testing.T) {
	code, rep := simJSON(t, append(failing, "--shrink", "--seed", "3")...)
	if code != 1 || rep.Shrunk == nil {
		t.Fatalf("exit %d, shrunk %+v, want a failing run, shrunk", code, rep.Shrunk)
	}
	s := rep.Shrunk
	if s.From != 7 || s.Count >= s.From || faultCount(t, s.Faults) != s.Count || s.Runs < 1 {
		t.Errorf("shrunk %+v: want fewer than 7 faults", s)
	}
	if strings.Contains(s.Replay, "--chaos") || strings.Contains(s.Replay, "--shrink") {
		t.Errorf("minimal replay %q draws or shrinks again", s.Replay)
	}
	code, again := simJSON(t, replayArgs(t, s.Replay)...)
	if code != 1 || again.Faults != s.Faults {
		t.Errorf("minimal replay: exit %d under %q, want a failure under %q", code, again.Faults, s.Faults)
	}

	if _, clean := simJSON(t, "--ranks", "4", "--bytes", "4K", "--chaos", "3", "--kinds", "delay", "--shrink"); clean.Shrunk != nil {
		t.Errorf("a run that kept its invariants was shrunk: %+v", clean.Shrunk)
	}
}

// TestSimChaosSweep: each seed of a sweep draws its own plan; each failing
// seed prints it with its replay, and --shrink shrinks the first few.
func TestSimChaosSweep(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(append([]string{"sim"}, append(failing, "--seeds", "5", "--shrink", "--shrink-budget", "20s")...), &out, &errs)
	if code != 1 || !strings.Contains(out.String(), "5 seeds, 5 failing") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	plans := map[string]bool{}
	var replays, shrunk int
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "faults: "):
			plans[line] = true
		case strings.HasPrefix(line, "replay: "):
			replays++
			if strings.Contains(line, "--chaos") || !strings.Contains(line, "--faults") {
				t.Errorf("replay does not write out the plan: %s", line)
			}
		case strings.HasPrefix(line, "minimal: "):
			shrunk++
		}
	}
	if len(plans) != 5 || replays != 5 || shrunk != maxShrinks {
		t.Errorf("%d distinct plans, %d replays, %d shrunk; want 5, 5, %d:\n%s", len(plans), replays, shrunk, maxShrinks, out.String())
	}
}

// TestSimChaosBadFlags: bad chaos flags are usage errors.
func TestSimChaosBadFlags(t *testing.T) {
	for _, bad := range [][]string{{"--chaos", "-1"}, {"--chaos", "2", "--within", "0s"}, {"--kinds", "crash,melt"}, {"--shrink-budget", "0s"}} {
		var out, errs bytes.Buffer
		if code := run(append([]string{"sim"}, bad...), &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
