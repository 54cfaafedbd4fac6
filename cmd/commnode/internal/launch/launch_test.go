//go:build linux

package launch

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// childVar, when set, makes the test binary a rank: it does what its
// arguments say instead of running tests.
const childVar = "LAUNCH_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childVar) != "" {
		os.Exit(child(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// envKeys are the variables the "env" child prints.
var envKeys = []string{
	"RANK", "LOCAL_RANK", "ROLE_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "ROLE_WORLD_SIZE",
	"GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT",
	"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
	"TORCHCOMM_RANK", "TORCHCOMM_SIZE", "TORCHELASTIC_USE_AGENT_STORE",
}

const unset = "<unset>"

// child is a rank's program. Ranks that wait to be stopped print
// "ready PID" first, so that tests can act once they are up.
func child(args []string) int {
	rank, _ := strconv.Atoi(os.Getenv("RANK"))
	me := strconv.Itoa(rank)
	hang := func() int {
		fmt.Printf("ready %d\n", os.Getpid())
		time.Sleep(time.Hour)
		return 0
	}
	switch args[0] {
	case "env":
		for _, k := range envKeys {
			v, ok := os.LookupEnv(k)
			if !ok {
				v = unset
			}
			fmt.Printf("%s=%s\n", k, v)
		}
		return 0
	case "spam": // args[1] lines on each stream, then a line without newline
		n, _ := strconv.Atoi(args[1])
		for i := range n {
			fmt.Println(spamLine(rank, "out", i))
			fmt.Fprintln(os.Stderr, spamLine(rank, "err", i))
		}
		fmt.Print("last out")
		fmt.Fprint(os.Stderr, "last err")
		return 0
	case "exit": // rank args[1] exits with code args[2]
		if me == args[1] {
			code, _ := strconv.Atoi(args[2])
			return code
		}
		return hang()
	case "killself": // rank args[1] dies of SIGKILL
		if me == args[1] {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return hang()
	case "hang":
		return hang()
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		return hang()
	case "trap":
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		fmt.Printf("ready %d\n", os.Getpid())
		<-c
		fmt.Println("got interrupt")
		return 0
	case "usr1": // print each SIGUSR1, exit on SIGTERM
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGUSR1, syscall.SIGTERM)
		fmt.Printf("ready %d\n", os.Getpid())
		for sig := range c {
			if sig == syscall.SIGTERM {
				return 0
			}
			fmt.Println("got usr1")
		}
	case "spawn": // start a hanging grandchild on this rank's output, then args[1]: "hang" or "exit"
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		gc := exec.Command(self, "hang")
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		if args[1] == "exit" {
			return 0
		}
		return hang()
	case "launch": // a launcher of two hanging ranks, to be killed
		j := Job{N: 2, Command: []string{"self", "hang"}, Stdout: os.Stdout, Timeout: time.Minute}
		if _, err := j.Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", args)
	return 2
}

// spamLine is line i of a rank's stream. Every 50th is longer than a
// pipe's buffer, so it reaches the launcher in pieces.
func spamLine(rank int, stream string, i int) string {
	n := 10 + i%7
	if i%50 == 0 {
		n = 70_000
	}
	return fmt.Sprintf("%d %s %d %s", rank, stream, i, strings.Repeat(strconv.Itoa(rank%10), n))
}

// job is a job whose ranks are this test binary doing args. Its timeout
// only keeps a broken test from hanging.
func job(n int, args ...string) *Job {
	return &Job{
		N:       n,
		Command: append([]string{"self"}, args...),
		Env:     append(os.Environ(), childVar+"=1"),
		Grace:   5 * time.Second,
		Timeout: time.Minute,
	}
}

// watcher is an output writer that calls fn once n lines containing word
// have been written.
type watcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	word string
	n    int
	fn   func()
}

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.n > 0 && bytes.Contains(p, []byte(w.word)) {
		if w.n--; w.n == 0 {
			w.fn()
		}
	}
	return len(p), nil
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// pidAfter finds "[rank r] word PID" in out.
func pidAfter(t *testing.T, out string, r int, word string) int {
	t.Helper()
	prefix := fmt.Sprintf("[rank %d] %s ", r, word)
	for l := range strings.Lines(out) {
		if s, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), prefix); ok {
			if pid, err := strconv.Atoi(s); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
	return 0
}

// alive reports whether pid is a process that has not exited: a zombie
// waiting to be reaped by whatever adopted it counts as gone.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running", pid)
		}
	}
}

func TestWorkerEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, program, addr string
		port                int
	}{
		{"defaults", "self", "", 0},
		{"given", "commnode", "10.1.2.3", 29500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			j := job(3, "env")
			j.Command[0] = tc.program
			j.MasterAddr, j.MasterPort, j.Stdout = tc.addr, tc.port, &out
			j.Env = append(j.Env, "TORCHCOMM_RANK=7", "TORCHCOMM_SIZE=9", "TORCHELASTIC_USE_AGENT_STORE=True", "RANK=5")
			res, err := j.Run(context.Background())
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			if res.FirstFailed != -1 || len(res.Ranks) != 3 {
				t.Fatalf("result %+v", res)
			}
			for r, s := range res.Ranks {
				if s != (Status{}) {
					t.Errorf("rank %d: %+v, want exit 0", r, s)
				}
			}
			if _, err := uuid.Parse(res.RunID); err != nil {
				t.Errorf("run id %q: %v", res.RunID, err)
			}
			if res.MasterAddr != cmp.Or(tc.addr, "127.0.0.1") || res.MasterPort <= 0 || (tc.port != 0 && res.MasterPort != tc.port) {
				t.Errorf("master %s:%d", res.MasterAddr, res.MasterPort)
			}

			got := make([]map[string]string, 3)
			for l := range strings.Lines(out.String()) {
				var r int
				var kv string
				if _, err := fmt.Sscanf(l, "[rank %d] %s", &r, &kv); err != nil || r < 0 || r >= 3 {
					t.Fatalf("line %q", l)
				}
				k, v, _ := strings.Cut(kv, "=")
				if got[r] == nil {
					got[r] = map[string]string{}
				}
				got[r][k] = v
			}
			for r := range 3 {
				want := map[string]string{
					"RANK": strconv.Itoa(r), "LOCAL_RANK": strconv.Itoa(r), "ROLE_RANK": strconv.Itoa(r),
					"WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3", "ROLE_WORLD_SIZE": "3",
					"GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default",
					"MASTER_ADDR": res.MasterAddr, "MASTER_PORT": strconv.Itoa(res.MasterPort),
					"TORCHELASTIC_RUN_ID": res.RunID, "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
					"TORCHCOMM_RANK": unset, "TORCHCOMM_SIZE": unset, "TORCHELASTIC_USE_AGENT_STORE": unset,
				}
				if !maps.Equal(got[r], want) {
					t.Errorf("rank %d saw %v\nwant %v", r, got[r], want)
				}
			}
		})
	}
}

func TestOutputIsWholePrefixedLines(t *testing.T) {
	t.Parallel()
	const ranks, lines = 6, 200
	// check reads every rank's stream lines from out, in order and whole.
	check := func(t *testing.T, out string, streams ...string) {
		t.Helper()
		type stream struct {
			rank int
			name string
		}
		next := map[stream]int{}
		for l := range strings.Lines(out) {
			var r int
			if _, err := fmt.Sscanf(l, "[rank %d] ", &r); err != nil {
				t.Fatalf("line without prefix: %.80q", l)
			}
			body := strings.TrimPrefix(strings.TrimSuffix(l, "\n"), fmt.Sprintf("[rank %d] ", r))
			for _, s := range streams {
				if i := next[stream{r, s}]; i < lines && body == spamLine(r, s, i) || i == lines && body == "last "+s {
					next[stream{r, s}]++
					body = ""
					break
				}
			}
			if body != "" {
				t.Fatalf("rank %d: unexpected line %.80q after %v", r, body, next)
			}
		}
		for r := range ranks {
			for _, s := range streams {
				if n := next[stream{r, s}]; n != lines+1 {
					t.Errorf("rank %d %s: %d of %d lines", r, s, n, lines+1)
				}
			}
		}
	}
	t.Run("separate", func(t *testing.T) {
		t.Parallel()
		// Plain buffers: the race detector checks that writes are serialised.
		var out, errb bytes.Buffer
		j := job(ranks, "spam", strconv.Itoa(lines))
		j.Stdout, j.Stderr = &out, &errb
		if _, err := j.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		check(t, out.String(), "out")
		check(t, errb.String(), "err")
	})
	t.Run("shared", func(t *testing.T) {
		t.Parallel()
		var both bytes.Buffer
		j := job(ranks, "spam", strconv.Itoa(lines))
		j.Stdout, j.Stderr = &both, &both
		if _, err := j.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		check(t, both.String(), "out", "err")
	})
}

func TestFailedRankStopsTheOthers(t *testing.T) {
	t.Parallel()
	res, err := job(4, "exit", "2", "3").Run(context.Background())
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 2 || re.Status != (Status{Code: 3}) || err.Error() != "rank 2 failed first: exit status 3" {
		t.Fatalf("error %v, want rank 2's exit status 3", err)
	}
	if res.FirstFailed != 2 {
		t.Errorf("FirstFailed %d", res.FirstFailed)
	}
	for r, s := range res.Ranks {
		if want := (Status{Code: -1, Signal: syscall.SIGTERM, Stopped: true}); r != 2 && s != want {
			t.Errorf("rank %d: %+v, want %+v", r, s, want)
		}
	}
}

func TestRankKilledBySignal(t *testing.T) {
	t.Parallel()
	res, err := job(3, "killself", "1").Run(context.Background())
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.Status != (Status{Code: -1, Signal: syscall.SIGKILL}) {
		t.Fatalf("error %v, want rank 1 killed", err)
	}
	if msg := err.Error(); msg != "rank 1 failed first: signal: killed" {
		t.Errorf("message %q", msg)
	}
	if res.FirstFailed != 1 || !res.Ranks[0].Stopped || !res.Ranks[2].Stopped {
		t.Errorf("result %+v", res)
	}
}

func TestGraceThenKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	w := &watcher{word: "ready", n: 2, fn: func() { cancelled = time.Now(); cancel() }}
	j := job(2, "stubborn")
	j.Grace, j.Stdout = 300*time.Millisecond, w
	res, err := j.Run(ctx)
	elapsed := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want cancelled", err)
	}
	if elapsed < j.Grace || elapsed > j.Grace+10*time.Second {
		t.Errorf("stopped %v after cancel, want just over the %v grace", elapsed, j.Grace)
	}
	for r, s := range res.Ranks {
		if want := (Status{Code: -1, Signal: syscall.SIGKILL, Stopped: true}); s != want {
			t.Errorf("rank %d: %+v, want %+v", r, s, want)
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	j := job(2, "hang")
	j.Timeout = 300 * time.Millisecond
	res, err := j.Run(context.Background())
	if !errors.Is(err, ErrTimeout) || err.Error() != "timed out after 300ms" {
		t.Fatalf("error %v, want timeout", err)
	}
	for r, s := range res.Ranks {
		if want := (Status{Code: -1, Signal: syscall.SIGTERM, Stopped: true}); s != want {
			t.Errorf("rank %d: %+v, want %+v", r, s, want)
		}
	}
}

func TestSignalsAreForwarded(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 1)
	w := &watcher{word: "ready", n: 2, fn: func() { sigs <- os.Interrupt }}
	j := job(2, "trap")
	j.Stdout, j.Signals = w, sigs
	res, err := j.Run(context.Background())
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want interrupted", err)
	}
	for r, s := range res.Ranks {
		if s != (Status{Stopped: true}) {
			t.Errorf("rank %d: %+v, want exit 0 after the signal", r, s)
		}
		if line := fmt.Sprintf("[rank %d] got interrupt\n", r); !strings.Contains(w.String(), line) {
			t.Errorf("no %q in output:\n%s", line, w)
		}
	}
}

// TestRelayedSignalsLeaveTheJobRunning relays SIGUSR1 to both ranks:
// each sees it, and the job runs on until stopped.
func TestRelayedSignalsLeaveTheJobRunning(t *testing.T) {
	t.Parallel()
	relay, sigs := make(chan os.Signal, 1), make(chan os.Signal, 1)
	got := &watcher{word: "got usr1", n: 2, fn: func() { sigs <- syscall.SIGTERM }}
	w := &watcher{word: "ready", n: 2, fn: func() { relay <- syscall.SIGUSR1 }}
	j := job(2, "usr1")
	j.Stdout, j.Signals, j.Relay = io.MultiWriter(w, got), sigs, relay
	res, err := j.Run(context.Background())
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want interrupted once the signals were seen", err)
	}
	for r, s := range res.Ranks {
		if s != (Status{Stopped: true}) {
			t.Errorf("rank %d: %+v, want exit 0 when stopped", r, s)
		}
		if line := fmt.Sprintf("[rank %d] got usr1\n", r); !strings.Contains(got.String(), line) {
			t.Errorf("no %q in output:\n%s", line, got)
		}
	}
}

func TestSecondSignalKills(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 2)
	w := &watcher{word: "ready", n: 2, fn: func() { sigs <- syscall.SIGTERM; sigs <- syscall.SIGTERM }}
	j := job(2, "stubborn")
	j.Stdout, j.Signals, j.Grace = w, sigs, time.Minute
	res, err := j.Run(context.Background())
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want interrupted", err)
	}
	for r, s := range res.Ranks {
		if want := (Status{Code: -1, Signal: syscall.SIGKILL, Stopped: true}); s != want {
			t.Errorf("rank %d: %+v, want %+v", r, s, want)
		}
	}
}

func TestStopReachesGrandchildren(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{word: "ready", n: 2, fn: cancel} // the rank and its child
	j := job(1, "spawn", "hang")
	j.Stdout = w
	if _, err := j.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want cancelled", err)
	}
	waitGone(t, pidAfter(t, w.String(), 0, "grandchild"))
}

func TestOutlivingGrandchildDoesNotHoldTheJob(t *testing.T) {
	t.Parallel()
	var spawned time.Time
	w := &watcher{word: "grandchild", n: 1, fn: func() { spawned = time.Now() }}
	j := job(1, "spawn", "exit")
	j.Stdout = w
	_, err := j.Run(context.Background())
	elapsed := time.Since(spawned)
	syscall.Kill(pidAfter(t, w.String(), 0, "grandchild"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	// The grandchild hangs for an hour holding the rank's stdout.
	if elapsed > drainDelay+10*time.Second {
		t.Errorf("Run returned %v after the rank's last line", elapsed)
	}
}

func TestRanksDieWithTheLauncher(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	launcher := exec.Command(self, "launch")
	launcher.Env = append(os.Environ(), childVar+"=1")
	pipe, err := launcher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := launcher.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for sc, n := bufio.NewScanner(pipe), 0; n < 2 && sc.Scan(); {
		if strings.Contains(sc.Text(), "ready") {
			n++
		}
		fmt.Fprintln(&out, sc.Text())
	}
	launcher.Process.Kill()
	launcher.Wait()
	for r := range 2 {
		waitGone(t, pidAfter(t, out.String(), r, "ready"))
	}
}

func TestRunRejects(t *testing.T) {
	t.Parallel()
	for _, j := range []*Job{
		{N: 0, Command: []string{"true"}},
		{N: 1},
		{N: 1, Command: []string{"no-such-program-for-launch-test"}},
	} {
		if res, err := j.Run(context.Background()); err == nil || len(res.Ranks) != 0 {
			t.Errorf("%+v: error %v, %d ranks started", j, err, len(res.Ranks))
		}
	}
}
