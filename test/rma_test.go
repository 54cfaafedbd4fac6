package test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRMAVerifyAcrossProcesses runs commnode rma --verify, torchcomms'
// WindowRmaTest ring and the atomics check, with one process per rank
// started by commnode launch, on 2 and 3 ranks over each transport. -short
// leaves out the ring's million-element blocks.
func TestRMAVerifyAcrossProcesses(t *testing.T) {
	args := []string{"rma", "--verify", "-timeout", "30s"}
	cases := 11 // 3 counts × 3 dtypes, and 2 atomics
	if testing.Short() {
		args = append(args, "-counts", "4,1024")
		cases = 8
	}
	for _, tr := range transports {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d_ranks", tr, n), func(t *testing.T) {
				t.Setenv("GOCOMMS_TRANSPORT", tr)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := runLaunch(t, ctx, n, args...)
				if err != nil {
					t.Fatalf("launch -n %d rma --verify: %v\n%s", n, err, out)
				}
				want := fmt.Sprintf("[rank 0] rma verify: %d cases on %d ranks, all correct", cases, n)
				if !strings.Contains(string(out), want) {
					t.Fatalf("no %q in\n%s", want, out)
				}
				if !strings.Contains(string(out), "transport "+tr) {
					t.Errorf("the header does not name transport %s:\n%s", tr, out)
				}
			})
		}
	}
}

// rmaLine is one of commnode rma's lines, as mpi_rma.c prints them.
var rmaLine = regexp.MustCompile(`(?m)^\[rank 0\] (put|put_pipelined|get|fetch_and_op|compare_and_swap) (\d+) (\d+) ([0-9.]+) ([0-9.]+) (\S+)$`)

// TestRMABenchAcrossProcesses runs a short commnode rma sweep between
// processes over each transport, on 3 ranks so that one idles: every op
// prints its lines, checked, with nothing wrong.
func TestRMABenchAcrossProcesses(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Setenv("GOCOMMS_TRANSPORT", tr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := runLaunch(t, ctx, 3, "rma", "-b", "8", "-e", "1M", "-f", "128", "-n", "20", "-w", "2", "-V", "4M", "-timeout", "30s")
			if err != nil {
				t.Fatalf("launch -n 3 rma: %v\n%s", err, out)
			}
			var got []string
			for _, m := range rmaLine.FindAllSubmatch(out, -1) {
				if string(m[6]) != "0" {
					t.Errorf("wrong %s in %q", m[6], m[0])
				}
				if us, _ := strconv.ParseFloat(string(m[4]), 64); us <= 0 {
					t.Errorf("no time in %q", m[0])
				}
				got = append(got, fmt.Sprintf("%s %s %s", m[1], m[2], m[3]))
			}
			want := "put 8 20,put 1024 20,put 131072 20,put_pipelined 8 20,put_pipelined 1024 20,put_pipelined 131072 20," +
				"get 8 20,get 1024 20,get 131072 20,fetch_and_op 8 20,compare_and_swap 8 20"
			if strings.Join(got, ",") != want {
				t.Fatalf("lines %q, want %s\n%s", got, want, out)
			}
		})
	}
}

// namesFailed[r] finds an error that says rank r failed, for r in a job of
// three ranks.
var namesFailed = [3]*regexp.Regexp{
	regexp.MustCompile(`peer failed: rank 0\b`),
	regexp.MustCompile(`peer failed: rank 1\b`),
	regexp.MustCompile(`peer failed: rank 2\b`),
}

// TestRMAKilledRank kills a rank mid-run, over each transport, and
// requires the survivors' window operations to fail with an error naming
// it, at once: a wait for a notification that will never come, a put or a
// flush to a rank that is gone, none may hang until a timeout.
//
//	ring    3 ranks run the WindowRmaTest ring for ever; rank 1 is killed:
//	        ranks 0 and 2, one waiting on rank 1's notification and one
//	        putting to it (or both in the barrier that closes an
//	        iteration), exit non-zero, one at least naming rank 1 (the
//	        other may name the first survivor to exit)
//	target  2 ranks: rank 0 puts to rank 1's window and flushes, for
//	        ever; rank 1 is killed: rank 0's put or flush fails naming
//	        rank 1
func TestRMAKilledRank(t *testing.T) {
	const timeout = 5 * time.Second
	for _, tr := range transports {
		t.Run(tr+"/ring", func(t *testing.T) {
			t.Setenv("GOCOMMS_TRANSPORT", tr)
			procs := startRanks(t, 3, []int{0, 1, 2}, "rma", "--verify", "-counts", "1024", "-n", "1000000000", "-timeout", timeout.String(), "--http", "127.0.0.1:0")
			survivors := killRankOf(t, procs, 1, timeout)
			// A survivor exits on its error, so the other may see it go
			// before it hears of rank 1, and name it: both are gone. One
			// of them, at least, names rank 1.
			named := 0
			for _, p := range survivors {
				other := 2 - p.rank // the other survivor: 0 or 2
				switch {
				case namesFailed[1].MatchString(p.stderr.String()):
					named++
				case !namesFailed[other].MatchString(p.stderr.String()):
					t.Errorf("rank %d's error names neither rank 1 nor rank %d, which left:\n%s", p.rank, other, p.stderr.String())
				}
			}
			if named == 0 {
				t.Errorf("no survivor names rank 1, the one killed")
			}
		})
		t.Run(tr+"/target", func(t *testing.T) {
			t.Setenv("GOCOMMS_TRANSPORT", tr)
			procs := startRanks(t, 2, []int{0, 1}, "rma", "--op", "put", "-b", "64K", "-e", "64K",
				"-n", "1000000000", "-V", "0", "-w", "1", "-timeout", timeout.String(), "--http", "127.0.0.1:0")
			survivors := killRankOf(t, procs, 1, timeout)
			// window_put #0: window 0: gocomms: peer failed: rank 1: ...
			want := regexp.MustCompile(`window_(put|flush) #\d+: window \d+: (gocomms: )?peer failed: rank 1\b`)
			if p := survivors[0]; !want.MatchString(p.stderr.String()) {
				t.Errorf("rank 0's error is not its put's or flush's, naming rank 1:\n%s", p.stderr.String())
			}
		})
	}
}

// serves is the line of a rank run with --http that says where it serves.
var serves = regexp.MustCompile(`rank \d+ serves (http://[^/]+)/`)

// killRankOf SIGKILLs procs' rank victim once the job is under way (every
// rank, run with --http, has an operation completed in its flight record),
// and returns the others once they have exited, failing the test unless
// each exited non-zero well inside its operation timeout.
func killRankOf(t *testing.T, procs []*rankProc, victim int, timeout time.Duration) []*rankProc {
	t.Helper()
	for _, p := range procs {
		p.waitFor(t, &p.stderr, serves, time.Minute)
		url := serves.FindStringSubmatch(p.stderr.String())[1] + "/debug/flight"
		waitFor(t, time.Minute, fmt.Sprintf("operation completed on rank %d", p.rank), func() bool {
			_, body := fetch(t, url)
			return strings.Contains(body, `"state":"completed"`)
		})
	}
	for _, p := range procs {
		select {
		case <-p.done:
			t.Fatalf("rank %d ended before the kill: %v\n%s", p.rank, p.err, p.stderr.String())
		default:
		}
	}
	if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	var survivors []*rankProc
	for _, p := range procs {
		if p.rank != victim {
			survivors = append(survivors, p)
		}
	}
	// Failing by a timeout would take timeout; a failure found takes
	// milliseconds.
	wait(t, survivors, timeout)
	for _, p := range survivors {
		took := p.ended.Sub(killedAt)
		if exitCode(p.err) <= 0 {
			t.Errorf("rank %d exited with %v after rank %d was killed, want a non-zero status", p.rank, p.err, victim)
		}
		if took >= timeout {
			t.Errorf("rank %d took %v to fail: a timeout, not the failure", p.rank, took)
		}
		t.Logf("rank %d failed %v after the kill: %s", p.rank, took.Round(time.Millisecond), lastLine(p.stderr.String()))
	}
	return survivors
}
