package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
)

const (
	// DefaultMasterAddr is MASTER_ADDR when Job.MasterAddr is empty.
	DefaultMasterAddr = "127.0.0.1"
	// DefaultGrace is the time between SIGTERM and SIGKILL when
	// Job.Grace is zero.
	DefaultGrace = 5 * time.Second
)

// drainDelay bounds how long output is still relayed once every rank has
// exited: a rank's descendants may hold its pipes open indefinitely.
const drainDelay = time.Second

var (
	// ErrTimeout is wrapped by Run's error when Job.Timeout expired.
	ErrTimeout = errors.New("timed out")
	// ErrInterrupted is wrapped by Run's error when a signal arrived on
	// Job.Signals.
	ErrInterrupted = errors.New("interrupted")
)

// A Job is N local processes of one command, the ranks of one job.
type Job struct {
	// N is the number of ranks, at least 1.
	N int
	// Command is the program and its arguments. The program is looked up
	// in PATH; "commnode" and "self" name the running executable.
	Command []string
	// MasterAddr is every rank's MASTER_ADDR; empty means
	// DefaultMasterAddr.
	MasterAddr string
	// MasterPort is every rank's MASTER_PORT; 0 means a port that was free
	// when Run started (see freePort).
	MasterPort int
	// Grace is how long ranks get between SIGTERM and SIGKILL when the job
	// is stopped; 0 means DefaultGrace.
	Grace time.Duration
	// Timeout bounds the whole job; 0 means none.
	Timeout time.Duration
	// Stdout and Stderr receive the ranks' stdout and stderr lines, each
	// prefixed with "[rank R] ", one Write per line. Nil discards. Ranks
	// read no stdin.
	Stdout, Stderr io.Writer
	// Env is the environment the worker variables are set on top of; nil
	// means os.Environ().
	Env []string
	// Signals, if not nil, carries signals to forward to every running
	// rank, which starts the stop sequence with that signal in place of
	// SIGTERM; one arriving while the job is already stopping sends
	// SIGKILL at once. Closing it forwards nothing.
	Signals <-chan os.Signal
	// Relay, if not nil, carries signals to pass to every running rank's
	// process, not its group, as they come, leaving the job running:
	// SIGUSR1, which has a rank dump its flight records.
	Relay <-chan os.Signal
}

// Result is what a job's ranks did.
type Result struct {
	// RunID is every rank's TORCHELASTIC_RUN_ID.
	RunID string
	// MasterAddr and MasterPort are every rank's MASTER_ADDR and
	// MASTER_PORT.
	MasterAddr string
	MasterPort int
	// Ranks holds each started rank's status, indexed by rank; it is
	// shorter than N only if starting a rank failed.
	Ranks []Status
	// FirstFailed is the rank whose failure stopped the job, or -1.
	FirstFailed int
}

// Status is how one rank ended.
type Status struct {
	// Code is the exit code, or -1 if a signal ended the rank.
	Code int
	// Signal is the signal that ended the rank, or 0.
	Signal syscall.Signal
	// Stopped reports that the launcher signalled the rank while it was
	// running, to stop the job.
	Stopped bool
}

func (s Status) String() string {
	if s.Signal != 0 {
		return "signal: " + s.Signal.String()
	}
	return "exit status " + strconv.Itoa(s.Code)
}

// A RankError reports the rank whose failure stopped the job.
type RankError struct {
	Rank   int
	Status Status
}

func (e *RankError) Error() string {
	return fmt.Sprintf("rank %d failed first: %v", e.Rank, e.Status)
}

// Run starts the job's ranks and waits until every one has exited. Its
// error is nil only if every rank exited 0 and nothing stopped the job;
// otherwise it is a *RankError, wraps ErrTimeout, ErrInterrupted or the
// context's cause, or says why a rank could not start.
func (j *Job) Run(ctx context.Context) (Result, error) {
	res := Result{FirstFailed: -1}
	if j.N < 1 {
		return res, fmt.Errorf("need at least 1 rank, got %d", j.N)
	}
	if len(j.Command) == 0 {
		return res, errors.New("no command")
	}
	path, err := resolve(j.Command[0])
	if err != nil {
		return res, err
	}
	res.MasterAddr = cmp.Or(j.MasterAddr, DefaultMasterAddr)
	res.MasterPort = j.MasterPort
	if res.MasterPort == 0 {
		if res.MasterPort, err = freePort(); err != nil {
			return res, err
		}
	}
	res.RunID = uuid.NewString()

	// On Linux a rank's death signal fires when the thread that started it
	// exits, and the Go runtime ends a thread whose goroutine exits locked
	// to it; holding this thread until the ranks are gone keeps it alive.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	s := &session{job: j, res: &res, exits: make(chan exit, j.N)}
	base := baseEnv(j.Env)
	for r := range j.N {
		if err := s.start(r, path, res.workerEnv(base, r, j.N)); err != nil {
			s.stop(fmt.Errorf("start rank %d: %w", r, err), syscall.SIGTERM)
			break
		}
	}
	s.wait(ctx)
	s.drain()
	return res, s.cause
}

// A session is a job whose ranks have been started. Its fields belong to
// the goroutine running Run, except relays, lines and exits, which it
// shares with the goroutines relaying output and waiting for ranks.
type session struct {
	job     *Job
	res     *Result
	cmds    []*exec.Cmd
	running []bool
	exits   chan exit
	pipes   []*os.File // read ends, closed by the relays
	relays  sync.WaitGroup
	lines   lineWriter

	cause     error            // why the job is stopping; nil while it is not
	graceOver <-chan time.Time // when to send SIGKILL
}

type exit struct {
	rank   int
	status Status
}

// start starts rank r, which is len(s.cmds), with the goroutines relaying
// its output and the one reporting its exit.
func (s *session) start(r int, path string, env []string) error {
	cmd := exec.Command(path, s.job.Command[1:]...)
	cmd.Env = env
	if err := InOwnGroup(cmd); err != nil {
		return err
	}
	var reads, writes []*os.File
	var dsts []io.Writer
	for _, o := range []struct {
		dst io.Writer
		out *io.Writer
	}{{s.job.Stdout, &cmd.Stdout}, {s.job.Stderr, &cmd.Stderr}} {
		if o.dst == nil {
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll(reads)
			closeAll(writes)
			return err
		}
		*o.out = pw
		reads, writes, dsts = append(reads, pr), append(writes, pw), append(dsts, o.dst)
	}
	err := cmd.Start()
	closeAll(writes)
	if err != nil {
		closeAll(reads)
		return err
	}
	prefix := "[rank " + strconv.Itoa(r) + "] "
	for i, pr := range reads {
		s.relays.Add(1)
		go func() {
			defer s.relays.Done()
			defer pr.Close()
			s.lines.copy(dsts[i], pr, prefix)
		}()
	}
	go func() {
		cmd.Wait()
		s.exits <- exit{r, statusOf(cmd.ProcessState)}
	}()
	s.pipes = append(s.pipes, reads...)
	s.cmds = append(s.cmds, cmd)
	s.running = append(s.running, true)
	s.res.Ranks = append(s.res.Ranks, Status{})
	return nil
}

// signal sends sig to the process group of every running rank. An exited
// rank's group is left alone: once the rank is reaped its id may be
// reused by an unrelated process group.
func (s *session) signal(sig syscall.Signal) {
	for r, cmd := range s.cmds {
		if s.running[r] {
			s.res.Ranks[r].Stopped = true
			SignalGroup(cmd.Process.Pid, sig)
		}
	}
}

// stop starts the stop sequence: sig now, SIGKILL after the grace period.
func (s *session) stop(cause error, sig syscall.Signal) {
	s.cause = cause
	s.signal(sig)
	s.graceOver = time.After(cmp.Or(s.job.Grace, DefaultGrace))
}

// wait runs the job until every started rank has exited, stopping it on
// the first failure, timeout, cancellation or signal.
func (s *session) wait(ctx context.Context) {
	var timedOut <-chan time.Time
	if t := s.job.Timeout; t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timedOut = timer.C
	}
	done, sigs, relay := ctx.Done(), s.job.Signals, s.job.Relay
	for live := len(s.cmds); live > 0; {
		select {
		case e := <-s.exits:
			live--
			s.running[e.rank] = false
			e.status.Stopped = s.res.Ranks[e.rank].Stopped
			s.res.Ranks[e.rank] = e.status
			if s.cause == nil && e.status.Code != 0 {
				s.res.FirstFailed = e.rank
				s.stop(&RankError{e.rank, e.status}, syscall.SIGTERM)
			}
		case <-done:
			done = nil
			if s.cause == nil {
				s.stop(context.Cause(ctx), syscall.SIGTERM)
			}
		case <-timedOut:
			if s.cause == nil {
				s.stop(fmt.Errorf("%w after %v", ErrTimeout, s.job.Timeout), syscall.SIGTERM)
			}
		case sig, ok := <-sigs:
			if !ok {
				sigs = nil
				break
			}
			if s.cause != nil {
				s.signal(syscall.SIGKILL)
				break
			}
			fwd, ok := sig.(syscall.Signal)
			if !ok {
				fwd = syscall.SIGTERM
			}
			s.stop(fmt.Errorf("%w by signal %v", ErrInterrupted, sig), fwd)
		case sig, ok := <-relay:
			if !ok {
				relay = nil
				break
			}
			for r, cmd := range s.cmds {
				if s.running[r] {
					cmd.Process.Signal(sig) // one that has just exited is no matter
				}
			}
		case <-s.graceOver:
			s.graceOver = nil
			s.signal(syscall.SIGKILL)
		}
	}
}

// drain waits for the relays to pass on the ranks' last output, for at most
// drainDelay: descendants that outlived their rank may hold its pipes.
func (s *session) drain() {
	relayed := make(chan struct{})
	go func() {
		s.relays.Wait()
		close(relayed)
	}()
	select {
	case <-relayed:
	case <-time.After(drainDelay):
		for _, p := range s.pipes {
			p.SetReadDeadline(time.Now())
		}
		<-relayed
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// resolve finds the program to run.
func resolve(name string) (string, error) {
	if name == "commnode" || name == "self" {
		return os.Executable()
	}
	return exec.LookPath(name)
}

// freePort binds port 0 on every interface and releases the port the
// kernel chose, for rank 0 to bind as MASTER_PORT; this is what keeps
// launches on one machine apart. Another process may take the port before
// rank 0 binds it, and then rank 0 fails to listen and the job fails. The
// race is accepted: the kernel draws ephemeral ports at random from a
// range of thousands, so another bind rarely draws the same one before
// rank 0 binds it, and Job.MasterPort avoids the race altogether.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, fmt.Errorf("choose a master port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// notInherited are variables removed from the base environment: the
// launcher never sets them, and values from an enclosing job would mislead
// every rank.
var notInherited = []string{"TORCHCOMM_RANK=", "TORCHCOMM_SIZE=", "TORCHELASTIC_USE_AGENT_STORE="}

func baseEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	base := make([]string, 0, len(env))
next:
	for _, kv := range env {
		for _, p := range notInherited {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		base = append(base, kv)
	}
	return base
}

// workerEnv is base plus rank r's torchrun worker variables, which take
// precedence over any in base since exec keeps a key's last value.
func (res *Result) workerEnv(base []string, r, n int) []string {
	rank, size := strconv.Itoa(r), strconv.Itoa(n)
	return append(slices.Clip(base),
		"RANK="+rank,
		"LOCAL_RANK="+rank,
		"ROLE_RANK="+rank,
		"WORLD_SIZE="+size,
		"LOCAL_WORLD_SIZE="+size,
		"ROLE_WORLD_SIZE="+size,
		"GROUP_RANK=0",
		"GROUP_WORLD_SIZE=1",
		"ROLE_NAME=default",
		"MASTER_ADDR="+res.MasterAddr,
		"MASTER_PORT="+strconv.Itoa(res.MasterPort),
		"TORCHELASTIC_RUN_ID="+res.RunID,
		"TORCHELASTIC_RESTART_COUNT=0",
		"TORCHELASTIC_MAX_RESTARTS=0",
	)
}

func statusOf(ps *os.ProcessState) Status {
	if ps == nil {
		return Status{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Status{Code: -1, Signal: ws.Signal()}
	}
	return Status{Code: ps.ExitCode()}
}
