package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// transports are the values of GOCOMMS_TRANSPORT the tests run under:
// shared memory between the processes of this host, and TCP.
var transports = []string{"shm", "tcp"}

// TestVerifyAcrossProcesses runs the correctness sweep with one process
// per rank, started by commnode launch, at sizes including 1, a non-power
// of two and a prime, over each transport.
func TestVerifyAcrossProcesses(t *testing.T) {
	for _, tr := range transports {
		for _, n := range []int{1, 2, 3, 4, 7} {
			t.Run(fmt.Sprintf("%s/%d_ranks", tr, n), func(t *testing.T) {
				t.Setenv("GOCOMMS_TRANSPORT", tr)
				verify(t, n)
			})
		}
	}
}

// TestVerifyRegisteredAcrossProcesses runs the sweep on tensors from
// Comm.Alloc over shared memory, with counts whose sends go as
// descriptors of the registered memory the peers read in place.
func TestVerifyRegisteredAcrossProcesses(t *testing.T) {
	t.Setenv("GOCOMMS_TRANSPORT", "shm")
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d_ranks", n), func(t *testing.T) {
			verify(t, n, "-R", "-counts", "0,1,20000,70001")
		})
	}
}

// TestVerifyCUDAAcrossProcesses runs commnode verify on GPU tensors, one
// process per rank, the processes sharing the fake driver's one GPU: the
// operations are staged through pinned memory and cross shared memory and
// TCP between the processes.
func TestVerifyCUDAAcrossProcesses(t *testing.T) {
	useFakeCUDA(t)
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			t.Setenv("GOCOMMS_TRANSPORT", transport)
			out := verify(t, 3, "-device", "cuda", "-counts", "0,1,1000,20001")
			m := regexp.MustCompile(`on cuda:0, (\d+) operations ran from device memory of this host's ranks, (\d+) were staged`).FindSubmatch(out)
			if m == nil || string(m[1]) == "0" || string(m[2]) == "0" {
				t.Fatalf("verify did not take both the device group's path and the staged one:\n%s", out)
			}
		})
	}
	// A buffer of 2 KiB cuts the collectives into windows, as tensors
	// larger than the 256 MiB default are.
	t.Run("windows", func(t *testing.T) {
		t.Setenv("GOCOMMS_NVL_DEVICE_BUFFER", "2048")
		verify(t, 2, "-device", "cuda", "-counts", "0,1,700,1500")
	})
	// Without the group every operation is staged, as between hosts; a
	// 1 KiB piece pipelines the larger ones.
	t.Run("staged_pieces", func(t *testing.T) {
		t.Setenv("GOCOMMS_TRANSPORT", "tcp")
		t.Setenv("GOCOMMS_NVL_DEVICE_BUFFER", "0")
		t.Setenv("GOCOMMS_STAGE_CHUNK", "1024")
		verify(t, 3, "-device", "cuda", "-counts", "0,1,700")
	})
}

func verify(t *testing.T, n int, flags ...string) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runLaunch(t, ctx, n, append([]string{"verify", "-timeout", "30s"}, flags...)...)
	if err != nil {
		t.Fatalf("launch -n %d verify: %v\n%s", n, err, out)
	}
	if !regexp.MustCompile(fmt.Sprintf(`\[rank 0\] verify: \d+ cases on %d ranks, all correct`, n)).Match(out) {
		t.Fatalf("no verdict from rank 0:\n%s", out)
	}
	return out
}

// TestEveryScheduleAcrossProcesses runs every op with each of its
// schedules, checked, with one process per rank over TCP, at 1 to 9, 16
// and 17 ranks.
func TestEveryScheduleAcrossProcesses(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17} {
		t.Run(fmt.Sprintf("%d_ranks", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := runLaunch(t, ctx, n, "bench", "--op", "all", "--algo", "all", "--dtype", "int32",
				"-b", "4", "-e", "256K", "-f", "64", "-n", "1", "-w", "0", "-c", "1", "-timeout", "30s")
			if err != nil {
				t.Fatalf("launch -n %d bench --algo all: %v\n%s", n, err, out)
			}
			for _, want := range []string{"# all_reduce by rabenseifner", "# broadcast by scatter_allgather", "# all_to_all by bruck", "[rank 0] # Out of bounds values : 0 OK"} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("no %q in\n%s", want, out)
				}
			}
		})
	}
}

// TestKilledRankFailsTheOthers kills one rank mid-run, over each
// transport: every other rank must exit non-zero within its timeout,
// naming the rank that died, and nothing is left in /dev/shm.
func TestKilledRankFailsTheOthers(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Setenv("GOCOMMS_TRANSPORT", tr)
			before := shmEntries(t)
			killRank(t)
			if after := shmEntries(t); len(after) > len(before) {
				t.Errorf("/dev/shm held %v before the job and %v after", before, after)
			}
		})
	}
}

// shmEntries lists /dev/shm, where a shared-memory segment with a name
// would outlive a killed job.
func shmEntries(t *testing.T) []string {
	entries, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// firstRow matches the row of bench's first size, 8 bytes: printed once
// every rank is connected and the next, long size's loop has begun.
var firstRow = regexp.MustCompile(`(?m)^ +8 +2 `)

func killRank(t *testing.T) {
	const timeout = 5 * time.Second
	procs := startRanks(t, 3, []int{0, 1, 2}, "bench", "-timeout", timeout.String(),
		"-b", "8", "-e", "4M", "-f", "524288", "-n", "3000", "-w", "1", "-c", "0")
	procs[0].waitFor(t, &procs[0].stdout, firstRow, time.Minute) // the 4 MiB loop runs
	for _, p := range procs {
		select {
		case <-p.done:
			t.Fatalf("rank %d ended before the kill: %v\n%s", p.rank, p.err, p.stderr.String())
		default:
		}
	}
	if err := procs[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	wait(t, procs, timeout+10*time.Second)
	for _, p := range []*rankProc{procs[0], procs[2]} {
		if exitCode(p.err) <= 0 {
			t.Errorf("rank %d exited with %v after rank 1 was killed, want a non-zero status", p.rank, p.err)
		}
		if !strings.Contains(p.stderr.String(), "rank 1") {
			t.Errorf("rank %d's error does not name rank 1:\n%s", p.rank, p.stderr.String())
		}
		t.Logf("rank %d failed %v after the kill: %s", p.rank, time.Since(killedAt).Round(time.Millisecond), lastLine(p.stderr.String()))
	}
}

// TestAbortReachesEveryRank interrupts one of four ranks mid-run: it
// aborts its communicator, and every other rank's pending operation must
// fail at once, not at its timeout (torchcomms' abort, across processes).
func TestAbortReachesEveryRank(t *testing.T) {
	const timeout = 30 * time.Second
	procs := startRanks(t, 4, []int{0, 1, 2, 3}, "bench", "-timeout", timeout.String(),
		"-b", "8", "-e", "4M", "-f", "524288", "-n", "3000", "-w", "1", "-c", "0")
	procs[0].waitFor(t, &procs[0].stdout, firstRow, time.Minute) // the 4 MiB loop runs
	if err := procs[1].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	abortedAt := time.Now()
	others := []*rankProc{procs[0], procs[2], procs[3]}
	wait(t, others, 5*time.Second)
	for _, p := range others {
		if exitCode(p.err) <= 0 {
			t.Errorf("rank %d exited with %v after rank 1 aborted, want a non-zero status:\n%s", p.rank, p.err, p.stderr.String())
		}
		t.Logf("rank %d exited %v after the abort: %s", p.rank, p.ended.Sub(abortedAt).Round(time.Millisecond), lastLine(p.stderr.String()))
	}
	wait(t, procs[1:2], 5*time.Second)
}

// TestStoppedRankIsNamed stops one rank (SIGSTOP) mid-run: its
// connections stay open, but it answers nothing, so the ranks that wait
// on it find it silent and exit naming it, well inside their operation
// timeout. Once it resumes (SIGCONT), it finds its peers gone and exits
// with an error too, having reported no wrong result.
func TestStoppedRankIsNamed(t *testing.T) {
	const timeout, silence = 30 * time.Second, 2 * time.Second
	procs := startRanks(t, 3, []int{0, 1, 2}, "bench", "-timeout", timeout.String(),
		"-heartbeat", "250ms", "-silence", silence.String(),
		"-b", "8", "-e", "1M", "-f", "131072", "-n", "20000", "-w", "1", "-c", "1")
	procs[0].waitFor(t, &procs[0].stdout, firstRow, time.Minute) // the 1 MiB loop runs
	if err := procs[1].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	wait(t, []*rankProc{procs[0], procs[2]}, timeout)
	silent := false // the silence detector, not the timeout, named rank 1
	for _, p := range []*rankProc{procs[0], procs[2]} {
		took := time.Since(stoppedAt)
		if exitCode(p.err) <= 0 || !strings.Contains(p.stderr.String(), "rank 1") {
			t.Errorf("rank %d exited with %v, want a non-zero status and an error naming rank 1:\n%s", p.rank, p.err, p.stderr.String())
		}
		silent = silent || strings.Contains(p.stderr.String(), "peer silent: rank 1 sent nothing")
		t.Logf("rank %d failed within %v of the stop: %s", p.rank, took.Round(time.Millisecond), lastLine(p.stderr.String()))
	}
	if !silent {
		t.Errorf("no rank's silence detector named rank 1: they found it otherwise (the timeout?)")
	}
	if err := procs[1].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wait(t, procs[1:2], timeout)
	p := procs[1]
	if exitCode(p.err) <= 0 || strings.Contains(p.stdout.String()+p.stderr.String(), "wrong") {
		t.Errorf("rank 1, resumed, exited with %v:\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout.String(), p.stderr.String())
	}
	t.Logf("rank 1, resumed: %s", lastLine(p.stderr.String()))
}

// TestRankThatNeverStarts leaves one rank out: the others must time out
// with an error naming it, whether it is a plain rank or rank 0, which
// serves the store.
func TestRankThatNeverStarts(t *testing.T) {
	for _, missing := range []int{1, 0} {
		t.Run(fmt.Sprintf("rank_%d", missing), func(t *testing.T) {
			var started []int
			for r := range 3 {
				if r != missing {
					started = append(started, r)
				}
			}
			procs := startRanks(t, 3, started, "verify", "-timeout", "3s")
			wait(t, procs, 30*time.Second)
			for _, p := range procs {
				if exitCode(p.err) <= 0 {
					t.Errorf("rank %d exited with %v, want a non-zero status", p.rank, p.err)
				}
				want := regexp.MustCompile(fmt.Sprintf(`ranks? \[?%d\]?`, missing))
				if !want.MatchString(p.stderr.String()) {
					t.Errorf("rank %d's error does not name rank %d:\n%s", p.rank, missing, p.stderr.String())
				}
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestDemo runs the README's first command: 4 processes verify and bench.
func TestDemo(t *testing.T) {
	out, err := exec.Command(commnode, "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("commnode demo: %v\n%s", err, out)
	}
	for _, want := range []string{"verify: ", "cases on 4 ranks, all correct", "# Out of bounds values : 0 OK"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("commnode demo printed no %q:\n%s", want, out)
		}
	}
}
