//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBenchFTUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-np", "1"}, "-np must be at least 2"},
		{[]string{"-np", "-3"}, "-np must be at least 2"},
		{[]string{"--duration", "0s"}, "--duration must be positive"},
		{[]string{"--duration", "-5s"}, "--duration must be positive"},
		{[]string{"--kill-every", "-1s"}, "--kill-every must not be negative"},
		{[]string{"--replace-after", "-1ms"}, "--replace-after must not be negative"},
		{[]string{"--compute", "-20ms"}, "--compute must not be negative"},
		{[]string{"--warmup", "-2s"}, "--warmup must not be negative"},
		{[]string{"--join-timeout", "0s"}, "--join-timeout must be positive"},
		{[]string{"--grow-every", "-1s"}, "--grow-every must be positive"},
		{[]string{"-timeout", "0s"}, "-timeout must be positive"},
		{[]string{"-b", "6"}, "-b must be a multiple of 4"},
		{[]string{"-b", "0"}, "-b must be a multiple of 4"},
		{[]string{"-b", "2G"}, "-b must be a multiple of 4"},
		{[]string{"-b", "lots"}, "bad size"},
		{[]string{"--warmup", "20s", "--kill-every", "15s"}, "must end before the first kill"},
		{[]string{"--warmup", "10s", "--duration", "10s", "--kill-every", "0"}, "must be shorter than --duration"},
		{[]string{"-heartbeat", "-1s"}, "-heartbeat must not be negative"},
		{[]string{"-heartbeat", "2s", "-silence", "1s"}, "must be at most -silence"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--bogus"}, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"--ft"}, c.args...)
		code := benchCommand(args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) || !strings.Contains(errb.String(), "usage: commnode bench --ft") {
			t.Errorf("bench %q: exit %d, stderr %q; want 2 and %q with the usage", args, code, errb.String(), c.want)
		}
		if out.Len() > 0 {
			t.Errorf("bench %q: stdout %q, want nothing", args, out.String())
		}
	}
}

func TestBenchFTWantsIt(t *testing.T) {
	for _, c := range []struct {
		args           []string
		driver, worker bool
	}{
		{[]string{"-local", "2"}, false, false},
		{[]string{"--ft"}, true, false},
		{[]string{"-np", "3", "-ft"}, true, false},
		{[]string{"--ft=true"}, true, false},
		{[]string{"--ft=false"}, false, false},
		{[]string{"--ft-worker", "-b", "4"}, false, true},
		{[]string{"-local", "2", "--", "--ft"}, false, false},
		{[]string{"-comm", "ft"}, false, false},
	} {
		d, w := ftWantsIt(c.args)
		if d != c.driver || w != c.worker {
			t.Errorf("ftWantsIt(%q) = %v, %v; want %v, %v", c.args, d, w, c.driver, c.worker)
		}
	}
}

// ftSynth builds a run of np workers for ftAnalyze, in milliseconds from
// the first step.
type ftSynth struct {
	t0 time.Time
	tl ftTimeline
}

func newFTSynth(np int) *ftSynth {
	t0 := time.Unix(1_700_000_000, 0)
	return &ftSynth{t0: t0, tl: ftTimeline{NP: np, Start: t0}}
}

func (s *ftSynth) at(ms float64) time.Time {
	return s.t0.Add(time.Duration(ms * float64(time.Millisecond)))
}

// step has each of pids report step at ms, the first one then, the others
// a millisecond apiece later.
func (s *ftSynth) step(step int64, ms float64, contributors int, pids ...int) {
	for i, pid := range pids {
		s.tl.Records = append(s.tl.Records, ftRecord{
			T: s.at(ms + float64(i)).UnixNano(), Step: step, Contributors: contributors,
			Size: contributors, Rank: i, Pid: pid,
		})
	}
}

// standard is a run of 3 workers with a step every 10 ms: pid 1 is killed
// at 1000 ms and replaced at once by pid 4; the survivors complete step
// 100 at 1050 ms, and pid 4 takes part from step 110, at 1150 ms, until
// step 149, at 1540 ms. The run stops at 1545 ms.
func standardFTRun() *ftSynth {
	s := newFTSynth(3)
	for n := range int64(100) {
		s.step(n, float64(n)*10, 3, 1, 2, 3)
	}
	for n := int64(100); n < 110; n++ {
		s.step(n, 1050+float64(n-100)*10, 2, 2, 3)
	}
	for n := int64(110); n < 150; n++ {
		s.step(n, 1150+float64(n-110)*10, 3, 3, 2, 4)
	}
	s.tl.Warmup = 200 * time.Millisecond
	s.tl.End = s.at(1545)
	s.tl.Faults = []ftFault{{Slot: 0, Pid: 1, At: s.at(1000), Replacement: 4, ReplacedAt: s.at(1000)}}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestFTAnalyze(t *testing.T) {
	r := standardFTRun().analyze()
	if len(r.Problems) > 0 || r.Wrong != 0 || r.Inconsistent != 0 {
		t.Fatalf("problems %q, wrong %d, inconsistent %d; want none", r.Problems, r.Wrong, r.Inconsistent)
	}
	if r.Steps != 150 || r.FirstStep != 0 || r.LastStep != 149 || r.FinalContributors != 3 {
		t.Errorf("steps %d (%d to %d), final contributors %d; want 150 (0 to 149), 3",
			r.Steps, r.FirstStep, r.LastStep, r.FinalContributors)
	}
	// Steps 20 to 99 complete in [200 ms, 1000 ms): 80 in 0.8 s.
	if w := r.FailureFree; w.Steps != 80 || !near(w.Rate, 100) || !near(w.FromS, 0.2) || !near(w.ToS, 1) {
		t.Errorf("failure-free %+v, want 80 steps over [0.2 s, 1 s), 100/s", w)
	}
	// Steps 20 to 149 complete in [200 ms, 1545 ms].
	if w := r.UnderFaults; w.Steps != 130 || !near(w.Rate, 130/1.345) || !near(w.ToS, 1.545) {
		t.Errorf("under faults %+v, want 130 steps over [0.2 s, 1.545 s]", w)
	}
	if !near(r.Ratio, 1.3/1.345) {
		t.Errorf("ratio %v, want %v", r.Ratio, 1.3/1.345)
	}
	if !near(r.MedianStepMS, 10) {
		t.Errorf("median step %v ms, want 10", r.MedianStepMS)
	}
	if len(r.Faults) != 1 {
		t.Fatalf("%d faults, want 1", len(r.Faults))
	}
	f := r.Faults[0]
	// Step 100 came 50 ms after the kill: 40 ms more than a step.
	if f.RecoveryMS == nil || !near(*f.RecoveryMS, 40) || f.RecoveryStep != 100 || f.Contributors != 2 {
		t.Errorf("recovery %v ms at step %d with %d contributors; want 40 ms, step 100, 2", deref(f.RecoveryMS), f.RecoveryStep, f.Contributors)
	}
	// Step 100 took 60 ms, the longest until the replacement took part.
	if !near(f.LongestStepMS, 60) {
		t.Errorf("longest step %v ms, want 60", f.LongestStepMS)
	}
	if f.RegrowMS == nil || !near(*f.RegrowMS, 150) || f.ReplacementPid != 4 || !near(deref(f.ReplacedAtS), 1) || !near(f.AtS, 1) {
		t.Errorf("fault %+v: regrow %v ms; want 150 ms by pid 4, replaced at 1 s", f, deref(f.RegrowMS))
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func (s *ftSynth) analyze() *ftReport { return ftAnalyze(s.tl) }

func TestFTAnalyzeFindsProblems(t *testing.T) {
	for _, c := range []struct {
		name         string
		change       func(s *ftSynth)
		wrong        int64
		inconsistent int
		problem      string
		check        func(t *testing.T, r *ftReport)
	}{
		{
			name: "wrong elements",
			change: func(s *ftSynth) {
				s.tl.Records[10].Wrong = 7
				s.tl.Records[20].Wrong = 1
			},
			wrong: 8, problem: "8 wrong elements",
		},
		{
			name: "workers disagree on the contributors",
			change: func(s *ftSynth) {
				s.tl.Records[31].Contributors = 2 // step 10, the second report
			},
			inconsistent: 1, problem: "inconsistencies",
		},
		{
			name: "a step is missing",
			change: func(s *ftSynth) {
				var keep []ftRecord
				for _, r := range s.tl.Records {
					if r.Step != 50 {
						keep = append(keep, r)
					}
				}
				s.tl.Records = keep
			},
			inconsistent: 1, problem: "inconsistencies",
		},
		{
			name: "a worker's steps go back",
			change: func(s *ftSynth) {
				s.step(5, 1546, 3, 2)
			},
			inconsistent: 1, problem: "inconsistencies",
		},
		{
			name: "the replacement starts over",
			change: func(s *ftSynth) {
				var rs []ftRecord
				for _, r := range s.tl.Records {
					if r.Pid == 4 {
						r.Step -= 110 // as if Heal gave it no step counter
					}
					rs = append(rs, r)
				}
				s.tl.Records = rs
			},
			inconsistent: 1, problem: "inconsistencies",
		},
		{
			name: "no step after the kill",
			change: func(s *ftSynth) {
				s.tl.Records = s.tl.Records[:300] // steps 0 to 99
			},
			problem: "no step completed after the kill",
			check: func(t *testing.T, r *ftReport) {
				if f := r.Faults[0]; f.RecoveryMS != nil || f.RegrowMS != nil {
					t.Errorf("recovery %v, regrow %v; want neither", deref(f.RecoveryMS), deref(f.RegrowMS))
				}
			},
		},
		{
			name: "the replacement never grows in",
			change: func(s *ftSynth) {
				s.tl.Records = s.tl.Records[:320] // up to step 109
			},
			problem: "never took part in a step at full size",
			check: func(t *testing.T, r *ftReport) {
				if f := r.Faults[0]; f.RecoveryMS == nil || f.RegrowMS != nil {
					t.Errorf("recovery %v, regrow %v; want only a recovery", deref(f.RecoveryMS), deref(f.RegrowMS))
				}
			},
		},
		{
			name: "a step right after the kill",
			change: func(s *ftSynth) {
				s.tl.Faults[0].At = s.at(1045)
			},
			check: func(t *testing.T, r *ftReport) {
				// 5 ms to the next step, less a 10 ms step: no less than 0.
				if f := r.Faults[0]; f.RecoveryMS == nil || *f.RecoveryMS != 0 || f.RecoveryStep != 100 {
					t.Errorf("recovery %v ms at step %d, want 0 at step 100", deref(f.RecoveryMS), f.RecoveryStep)
				}
			},
		},
		{
			name: "rejoins are counted",
			change: func(s *ftSynth) {
				s.tl.Records = append(s.tl.Records, ftRecord{T: s.at(1100).UnixNano(), Pid: 3, Step: 105, Event: "rejoin", Err: "x"})
			},
			check: func(t *testing.T, r *ftReport) {
				if r.Rejoins != 1 || r.Inconsistent != 0 {
					t.Errorf("rejoins %d, inconsistent %d; want 1, 0", r.Rejoins, r.Inconsistent)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := standardFTRun()
			c.change(s)
			r := s.analyze()
			if r.Wrong != c.wrong || r.Inconsistent != c.inconsistent {
				t.Errorf("wrong %d, inconsistent %d; want %d, %d", r.Wrong, r.Inconsistent, c.wrong, c.inconsistent)
			}
			got := strings.Join(r.Problems, "; ")
			if c.problem == "" && got != "" || !strings.Contains(got, c.problem) {
				t.Errorf("problems %q, want %q", got, c.problem)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

func TestFTAnalyzeWithoutFaults(t *testing.T) {
	s := newFTSynth(2)
	for n := range int64(50) {
		s.step(n, float64(n)*20, 2, 1, 2)
	}
	s.tl.Warmup = 100 * time.Millisecond
	s.tl.End = s.at(1000)
	r := s.analyze()
	// Steps 5 to 49 in [100 ms, 1000 ms], in both windows.
	if r.FailureFree != r.UnderFaults || r.FailureFree.Steps != 45 || !near(r.FailureFree.Rate, 50) || !near(r.Ratio, 1) {
		t.Errorf("failure-free %+v, under faults %+v, ratio %v; want 45 steps at 50/s in both", r.FailureFree, r.UnderFaults, r.Ratio)
	}
	if !near(r.MedianStepMS, 20) || len(r.Faults) != 0 || len(r.Problems) != 0 {
		t.Errorf("median %v ms, faults %v, problems %q; want 20 ms and none", r.MedianStepMS, r.Faults, r.Problems)
	}
}

func TestFTTable(t *testing.T) {
	r := standardFTRun().analyze()
	r.Bytes, r.ComputeMS, r.DurationS, r.KillEveryS, r.WarmupS, r.OK = 65536, 5, 1.5, 1, 0.2, true
	var b bytes.Buffer
	r.writeTable(&b)
	for _, want := range []string{
		"# gocomms bench --ft: 3 ranks, 65536 B float32 all-reduced per step, compute 5ms\n",
		"a worker SIGKILLed every 1s, replaced after 0s",
		"  failure-free        0.20      1.00       80    100.00\n",
		"# kept 96.7% of the failure-free step rate (goal: 90%); median failure-free step 10.0 ms\n",
		"      1     1.00     0        1          40.0     100            2          60.0         1.00       150.0\n",
		"# steps 150 (0 to 149), final contributors 3, wrong elements 0",
		"# OK\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// buildCommnode builds the commnode binary into a temporary directory:
// the driver runs its workers from its own executable.
func buildCommnode(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build commnode:", err)
	}
	exe := filepath.Join(t.TempDir(), "commnode")
	out, err := exec.Command("go", "build", "-o", exe, "github.com/gocomms/gocomms/cmd/commnode").CombinedOutput()
	if err != nil {
		t.Fatalf("building commnode: %v\n%s", err, out)
	}
	return exe
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone already
		}
		// pid (comm) state ppid ...; comm may hold anything but ")".
		i := bytes.LastIndexByte(b, ')')
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

// workerAlive reports whether pid is a bench --ft worker still running
// (a zombie counts as gone).
func workerAlive(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(cmdline, []byte("--ft-worker"))
}

func waitGone(t *testing.T, pids []int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for _, pid := range pids {
		for workerAlive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("worker %d still running %v after the driver ended", pid, limit)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestBenchFTEndToEnd runs the driver for real: 3 workers, one killed
// every 1.5 s and replaced at once, for 5 s.
func TestBenchFTEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes for seconds")
	}
	exe := buildCommnode(t)

	t.Run("faults", func(t *testing.T) {
		const np = 3
		stepsFile := filepath.Join(t.TempDir(), "steps.jsonl")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "bench", "--ft", "-np", strconv.Itoa(np), "--duration", "5s",
			"--kill-every", "1.5s", "-b", "64KiB", "--compute", "5ms", "--join-timeout", "2s", "-silence", "1s",
			"--warmup", "0.5s", "--json", "--steps", stepsFile)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		t.Logf("the driver ran %v", time.Since(start).Round(time.Millisecond))
		var rep ftReport
		if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
			t.Fatalf("exit %v; report: %v\nstdout:\n%s\nstderr:\n%s", err, jerr, out.String(), errb.String())
		}
		var pids []int
		for _, w := range rep.Workers {
			pids = append(pids, w.Pid)
		}
		waitGone(t, pids, 0)
		if err != nil || !rep.OK {
			t.Fatalf("exit %v, problems %q\nstdout:\n%s\nstderr:\n%s", err, rep.Problems, out.String(), errb.String())
		}

		recovered := 0
		for i, f := range rep.Faults {
			if f.RecoveryMS == nil || f.RegrowMS == nil {
				t.Errorf("fault %d %+v: recovery %v, regrow %v; want both measured", i+1, f, deref(f.RecoveryMS), deref(f.RegrowMS))
				continue
			}
			recovered++
		}
		if recovered < 2 {
			t.Errorf("%d faults recovered, want at least 2", recovered)
		}
		if rep.FinalContributors != np || rep.Wrong != 0 || rep.Inconsistent != 0 {
			t.Errorf("final contributors %d, wrong %d, inconsistent %d; want %d, 0, 0", rep.FinalContributors, rep.Wrong, rep.Inconsistent, np)
		}
		for _, w := range rep.Workers {
			want := "exit status 0"
			if w.Killed {
				want = "signal: killed"
			}
			if w.Status != want || w.Straggler {
				t.Errorf("worker %+v: want %s", w, want)
			}
		}

		// The workers' own records, as they printed them.
		f, err := os.Open(stepsFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		last := map[int]int64{}
		first := map[int64]ftRecord{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r ftRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("step record %q: %v", sc.Text(), err)
			}
			if r.Event != "" {
				continue
			}
			if l, ok := last[r.Pid]; ok && r.Step <= l {
				t.Errorf("pid %d: step %d after step %d", r.Pid, r.Step, l)
			}
			last[r.Pid] = r.Step
			if r.Wrong != 0 {
				t.Errorf("pid %d, step %d: %d wrong elements", r.Pid, r.Step, r.Wrong)
			}
			if s, ok := first[r.Step]; !ok || r.T < s.T {
				first[r.Step] = r
			}
		}
		if len(first) != rep.Steps || rep.Steps == 0 {
			t.Fatalf("%d steps in the records, %d in the report", len(first), rep.Steps)
		}
		prev := int64(math.MinInt64)
		for n := range int64(len(first)) {
			r, ok := first[n]
			if !ok {
				t.Fatalf("no record of step %d", n)
			}
			if r.T < prev {
				t.Errorf("step %d completed before step %d", n, n-1)
			}
			prev = r.T
		}
		for n := int64(len(first)) - 3; n < int64(len(first)); n++ {
			if c := first[n].Contributors; c != np {
				t.Errorf("step %d, near the end: %d contributors, want %d", n, c, np)
			}
		}
	})

	// stopped starts a driver that runs for long, lets its workers train,
	// signals it, and returns its exit error and its workers.
	stopped := func(t *testing.T, sig syscall.Signal) (error, []int, string) {
		// The driver writes the workers' step records to a pipe that the
		// test reads: the first says they train.
		steps := filepath.Join(t.TempDir(), "steps")
		if err := syscall.Mkfifo(steps, 0o600); err != nil {
			t.Fatal(err)
		}
		// Read-write, so that the open waits for no writer and a read
		// never sees an end.
		fifo, err := os.OpenFile(steps, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fifo.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "bench", "--ft", "-np", "2", "--duration", "1m", "--kill-every", "0",
			"-b", "4K", "--compute", "5ms", "--warmup", "0s", "--join-timeout", "2s", "--steps", steps)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The driver buffers the records: the first comes with a few
		// dozen steps.
		fifo.SetReadDeadline(time.Now().Add(20 * time.Second))
		records := bufio.NewReader(fifo)
		for {
			line, err := records.ReadBytes('\n')
			var r ftRecord
			if err == nil {
				err = json.Unmarshal(line, &r)
			}
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("reading the first step record: %v\n%s", err, out.String())
			}
			if r.Event == "" {
				break
			}
		}
		go io.Copy(io.Discard, records) // the rest, so that the driver's writes never wait; ends with fifo
		workers := childrenOf(t, cmd.Process.Pid)
		if len(workers) != 2 {
			t.Errorf("the driver runs %d workers, want 2", len(workers))
		}
		cmd.Process.Signal(sig)
		err = cmd.Wait()
		return err, workers, out.String()
	}

	t.Run("interrupted", func(t *testing.T) {
		err, workers, out := stopped(t, syscall.SIGINT)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "interrupted") {
			t.Errorf("exit %v, want status 1 saying interrupted\n%s", err, out)
		}
		waitGone(t, workers, 0)
	})

	t.Run("driver killed", func(t *testing.T) {
		_, workers, _ := stopped(t, syscall.SIGKILL)
		waitGone(t, workers, 5*time.Second)
	})
}
