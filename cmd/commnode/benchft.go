//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocomms/gocomms/cmd/commnode/internal/launch"
	"github.com/gocomms/gocomms/store/tcpstore"
)

// `commnode bench --ft` runs a data-parallel training loop in real
// processes under a fault plan, and reports how long the job took to
// recover from each fault and how much of its failure-free step rate it
// kept. The driver serves the job's store and starts the workers (itself,
// run again with --ft-worker); every --kill-every it SIGKILLs one and,
// --replace-after later, starts a replacement that grows in.

const benchFTUsage = "usage: commnode bench --ft [-np N] [--duration D] [--kill-every D] [--replace-after D] [-b BYTES] [--compute D] [--warmup D] [--join-timeout D] [--grow-every D] [-heartbeat D] [-silence D] [-timeout D] [--json] [--steps FILE] [-v] [-comm NAME]"

// ftStopKey is the store key the driver sets to end the run.
const ftStopKey = "commnode/bench-ft/stop"

// Driver timings that are no flags.
const (
	// ftGrace is how long the workers get to finish their last step and
	// exit once told to stop, before they are killed.
	ftGrace = 10 * time.Second
	// ftFinalize bounds a worker's finalizing at the end: a communicator
	// left behind by a fault may wait out a dead peer's silence.
	ftFinalize = 3 * time.Second
	// ftStartup bounds the wait for the first step, beyond --join-timeout.
	ftStartup = 30 * time.Second
	// ftSettle bounds, beyond --replace-after and --join-timeout, how long
	// the run goes on past --duration for a replacement to grow in.
	ftSettle = 5 * time.Second
)

// benchFT runs the --ft driver, or with worker one of its workers.
func benchFT(args []string, worker bool, stdout, stderr io.Writer) int {
	if worker {
		return ftWorkerCommand(args, stdout, stderr)
	}
	return ftDriverCommand(args, stdout, stderr)
}

// ftOptions are the driver's flags.
type ftOptions struct {
	job          jobFlags
	np           int
	duration     time.Duration
	killEvery    time.Duration
	replaceAfter time.Duration
	bytes        int64
	compute      time.Duration
	warmup       time.Duration
	joinTimeout  time.Duration
	growEvery    time.Duration
	json         bool
	steps        string
}

func parseFTOptions(args []string, stderr io.Writer) (ftOptions, int) {
	fs := commandFlags("bench --ft", benchFTUsage, stderr)
	o := ftOptions{bytes: 4 << 20}
	o.job.register(fs)
	fs.Bool("ft", true, "run the training loop under a fault plan (this mode)")
	fs.IntVar(&o.np, "np", 4, "worker processes (ranks) the job starts with")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long to train, from the first step")
	fs.DurationVar(&o.killEvery, "kill-every", 15*time.Second, "SIGKILL one worker this often (0: no faults)")
	fs.DurationVar(&o.replaceAfter, "replace-after", 0, "start a replacement this long after each kill")
	fs.Var(bytesFlag{&o.bytes}, "b", "`bytes` all-reduced per step, float32; suffix K, M or G for powers of 1024")
	fs.DurationVar(&o.compute, "compute", 20*time.Millisecond, "simulated compute per step (a sleep)")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "steps in this first stretch are left out of the rates")
	fs.DurationVar(&o.joinTimeout, "join-timeout", 5*time.Second, "how long a membership round waits for more members")
	fs.DurationVar(&o.growEvery, "grow-every", 100*time.Millisecond, "how often rank 0 looks for replacements waiting to grow in")
	fs.BoolVar(&o.json, "json", false, "print the report as one JSON object instead of the table")
	fs.StringVar(&o.steps, "steps", "", "write every step record the workers emitted to `FILE`, one JSON line each")
	if code, ok := parseFlags(fs, args); !ok {
		return o, code
	}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if o.np < 2 {
		bad("-np must be at least 2, got %d", o.np)
	}
	if o.duration <= 0 {
		bad("--duration must be positive, got %v", o.duration)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--kill-every", o.killEvery}, {"--replace-after", o.replaceAfter}, {"--compute", o.compute}, {"--warmup", o.warmup}} {
		if d.v < 0 {
			bad("%s must not be negative, got %v", d.name, d.v)
		}
	}
	if o.joinTimeout <= 0 {
		bad("--join-timeout must be positive, got %v", o.joinTimeout)
	}
	if o.growEvery <= 0 {
		bad("--grow-every must be positive, got %v", o.growEvery)
	}
	if o.job.timeout <= 0 {
		bad("-timeout must be positive, got %v", o.job.timeout)
	}
	if o.bytes < 4 || o.bytes%4 != 0 || o.bytes > 1<<30 {
		bad("-b must be a multiple of 4 bytes from 4 to 1G (float32 elements), got %d", o.bytes)
	}
	if o.duration > 0 && o.warmup >= o.duration {
		bad("--warmup %v must be shorter than --duration %v", o.warmup, o.duration)
	}
	if o.killEvery > 0 && o.warmup >= o.killEvery {
		bad("--warmup %v must end before the first kill, at --kill-every %v", o.warmup, o.killEvery)
	}
	if err := ftCheckDetector(o.job.heartbeat, o.job.silence); err != nil {
		bad("%v", err)
	}
	if fs.NArg() > 0 {
		bad("unexpected arguments %q", fs.Args())
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "commnode bench --ft: %s\n%s\n", strings.Join(problems, "; "), benchFTUsage)
		return o, 2
	}
	return o, 0
}

// ftCheckDetector rejects a failure detector the workers would refuse.
func ftCheckDetector(heartbeat, silence time.Duration) error {
	if heartbeat < 0 {
		return fmt.Errorf("-heartbeat must not be negative, got %v", heartbeat)
	}
	hb, si := cmp.Or(heartbeat, time.Second), cmp.Or(silence, 5*time.Second)
	if si > 0 && hb > si {
		return fmt.Errorf("-heartbeat %v must be at most -silence %v", hb, si)
	}
	return nil
}

// ftRecord is one line a worker prints: a step it completed, or an event.
type ftRecord struct {
	T            int64  `json:"t"` // unix nanoseconds at completion
	Step         int64  `json:"step"`
	Contributors int    `json:"contributors"`
	Size         int    `json:"size"` // the communicator's size after the step
	Rank         int    `json:"rank"`
	Pid          int    `json:"pid"`
	Wrong        int64  `json:"wrong"`           // elements of this step's results that were wrong
	Event        string `json:"event,omitempty"` // "rejoin": the worker left and joins again
	Err          string `json:"err,omitempty"`
}

// ftProc is a worker process the driver started.
type ftProc struct {
	slot        int // the initial worker it is, or replaces
	replacement bool
	cmd         *exec.Cmd
	pid         int
	started     time.Time
	running     bool
	killed      bool // by the fault plan
	straggler   bool // killed at the end, past the grace period
	status      string
	steps       int
	full        bool // took part in a step at full size
	tail        *tailWriter
}

// ftFault is one kill of the plan.
type ftFault struct {
	Slot        int
	Pid         int
	At          time.Time
	Replacement int       // the replacement's pid; 0 if none started
	ReplacedAt  time.Time // when it started
}

type ftEvent struct {
	p    *ftProc
	line []byte // a line of its stdout; nil when it exited
	rec  ftRecord
	err  error // the line was no record
}

// ftDriver runs the job: its fields belong to the goroutine of run.
type ftDriver struct {
	o       ftOptions
	exe     string
	env     []string
	stderr  io.Writer
	events  chan ftEvent
	readers sync.WaitGroup
	procs   []*ftProc
	slots   []*ftProc // the current process of each slot
	records []ftRecord
	faults  []*ftFault
	lines   io.Writer // --steps, or nil
	bad     []string  // lines that were no records

	stderrMu sync.Mutex // the workers' stderr, forwarded with -v

	problems []string
}

func ftDriverCommand(args []string, stdout, stderr io.Writer) int {
	o, code := parseFTOptions(args, stderr)
	if code != 0 {
		return code
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "commnode bench --ft:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &ftDriver{o: o, exe: exe, stderr: stderr, events: make(chan ftEvent, 1024)}
	if o.steps != "" {
		f, err := os.Create(o.steps)
		if err != nil {
			fmt.Fprintln(stderr, "commnode bench --ft:", err)
			return 1
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		d.lines = bw
	}
	rep, err := d.run(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "commnode bench --ft:", err)
		return 1
	}
	if o.json {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		rep.writeTable(stdout)
	}
	if !rep.OK {
		for _, p := range rep.Problems {
			fmt.Fprintln(stderr, "commnode bench --ft:", p)
		}
		return 1
	}
	return 0
}

// run serves the store, runs the plan, stops the workers and analyzes
// what they reported. Its error says why the run could not start.
func (d *ftDriver) run(ctx context.Context) (*ftReport, error) {
	// A worker's death signal fires when the thread that started it
	// exits; this goroutine starts them all and holds its thread until
	// they are gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	srv, err := tcpstore.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	addr := srv.Addr().(*net.TCPAddr)
	st, err := tcpstore.Dial(ctx, addr.String(), tcpstore.WithTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	d.env = append(os.Environ(), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(addr.Port))

	l := &ftLoop{d: d, st: st, launched: time.Now(), done: ctx.Done()}
	l.startup = l.launched.Add(d.o.joinTimeout + ftStartup)
	d.slots = make([]*ftProc, d.o.np)
	for s := range d.o.np {
		if err := d.start(s, false); err != nil {
			d.killAll()
			d.reap()
			return nil, err
		}
	}
	for d.live() > 0 {
		now := time.Now()
		l.act(now)
		l.wait(l.next(now))
	}
	// Each worker's lines came before its exit.
	d.readers.Wait()
	return d.report(l.t0, l.stopAt, l.launched), nil
}

// ftLoop is the state of ftDriver.run's loop, which starts the faults
// and replacements of the plan as they fall due, then stops the workers.
type ftLoop struct {
	d        *ftDriver
	st       *tcpstore.Client
	done     <-chan struct{} // the run's context's, until it is done
	launched time.Time
	startup  time.Time // the latest the first step may complete
	t0       time.Time // the first step's completion
	end      time.Time // --duration after t0
	settle   time.Time // the latest the run waits past end for replacements
	nextKill time.Time
	stopAt   time.Time // when the stop key was set
	killAt   time.Time // when stragglers are killed
	pending  []*ftFault
	nextSlot int
	stopping bool
}

// beginStop tells the workers to stop, once.
func (l *ftLoop) beginStop() {
	if l.stopping {
		return
	}
	l.stopping = true
	l.stopAt = time.Now()
	l.killAt = l.stopAt.Add(ftGrace)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.st.Set(sctx, ftStopKey, []byte("1")); err != nil {
		fmt.Fprintln(l.d.stderr, "commnode bench --ft: telling the workers to stop:", err)
		l.d.killAll()
	}
}

// act does what is due at now.
func (l *ftLoop) act(now time.Time) {
	switch {
	case l.stopping:
		if now.After(l.killAt) {
			l.killStragglers()
		}
	case l.t0.IsZero():
		if now.After(l.startup) {
			l.d.problem("no step completed within %v of the start", l.startup.Sub(l.launched).Round(time.Millisecond))
			l.beginStop()
		}
	default:
		l.replace(now)
		if !l.stopping && !l.nextKill.IsZero() && !now.Before(l.nextKill) && now.Before(l.end) {
			if f := l.d.kill(&l.nextSlot); f != nil {
				f.ReplacedAt = f.At.Add(l.d.o.replaceAfter) // when it is due
				l.pending = append(l.pending, f)
			}
			l.nextKill = l.nextKill.Add(l.d.o.killEvery)
		}
		if !l.stopping && !now.Before(l.end) {
			if l.settle.IsZero() {
				l.settle = l.end.Add(l.d.o.replaceAfter + l.d.o.joinTimeout + ftSettle)
			}
			if len(l.pending) == 0 && !l.d.regrowing() || now.After(l.settle) {
				l.beginStop()
			}
		}
	}
}

// killStragglers kills the workers still running past the grace after
// the stop.
func (l *ftLoop) killStragglers() {
	for _, p := range l.d.procs {
		if p.running && !p.straggler {
			p.straggler = true
			launch.SignalGroup(p.pid, syscall.SIGKILL)
		}
	}
}

// replace starts the replacements due at now; failing to, it stops the
// run.
func (l *ftLoop) replace(now time.Time) {
	for len(l.pending) > 0 && !now.Before(l.pending[0].ReplacedAt) {
		f := l.pending[0]
		l.pending = l.pending[1:]
		if err := l.d.start(f.Slot, true); err != nil {
			l.d.problem("starting a replacement for worker %d: %v", f.Slot, err)
			l.beginStop()
			return
		}
		f.Replacement, f.ReplacedAt = l.d.slots[f.Slot].pid, l.d.slots[f.Slot].started
	}
}

// next returns when the next thing falls due, after now.
func (l *ftLoop) next(now time.Time) time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	switch {
	case l.stopping:
		earliest(l.killAt)
		if now.After(l.killAt) {
			earliest(now.Add(time.Second))
		}
	case l.t0.IsZero():
		earliest(l.startup)
	default:
		if len(l.pending) > 0 {
			earliest(l.pending[0].ReplacedAt)
		}
		if l.nextKill.Before(l.end) {
			earliest(l.nextKill)
		}
		earliest(l.end)
		if now.After(l.end) {
			earliest(now.Add(10 * time.Millisecond))
		}
	}
	return next
}

// wait waits until next, a worker's event or the run's interruption,
// and handles what came.
func (l *ftLoop) wait(next time.Time) {
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	select {
	case ev := <-l.d.events:
		if ev.line == nil {
			l.exited(ev.p)
			return
		}
		l.d.line(ev)
		if ev.err == nil && ev.rec.Event == "" && l.t0.IsZero() {
			l.t0 = time.Unix(0, ev.rec.T)
			l.end = l.t0.Add(l.d.o.duration)
			if l.d.o.killEvery > 0 {
				l.nextKill = l.t0.Add(l.d.o.killEvery)
			}
		}
	case <-l.done:
		l.done = nil
		l.d.problem("interrupted")
		l.beginStop()
	case <-timer.C:
	}
}

// exited notes p's exit, a problem unless the plan or the stop ended it.
func (l *ftLoop) exited(p *ftProc) {
	l.d.exited(p)
	switch {
	case p.killed || p.straggler:
	case !l.stopping:
		l.d.problem("worker %d (pid %d) exited outside the fault plan: %s%s", p.slot, p.pid, p.status, p.tail.describe())
		l.beginStop()
	case !p.cmd.ProcessState.Success():
		l.d.problem("worker %d (pid %d) ended with %s%s", p.slot, p.pid, p.status, p.tail.describe())
	}
}

// start starts a worker for slot.
func (d *ftDriver) start(slot int, replacement bool) error {
	o := d.o
	expect := o.np
	if replacement {
		expect = 0
	}
	args := []string{"bench", "--ft-worker",
		"-b", strconv.FormatInt(o.bytes, 10),
		"--compute", o.compute.String(),
		"--join-timeout", o.joinTimeout.String(),
		"--grow-every", o.growEvery.String(),
		"--expect", strconv.Itoa(expect),
		"--min", strconv.Itoa(o.np/2 + 1),
		"-heartbeat", o.job.heartbeat.String(),
		"-silence", o.job.silence.String(),
		"-timeout", o.job.timeout.String(),
		"-comm", o.job.name,
		"--log-format", o.job.format.String(),
	}
	if o.job.verbose {
		args = append(args, "-v")
	}
	args = append(args, "--log-level", o.job.level.String()) // after -v, which it refines
	cmd := exec.Command(d.exe, args...)
	cmd.Env = d.env
	// Its own process group, so that a terminal's Ctrl-C reaches only the
	// driver, which stops the run in order; killed if the driver dies.
	if err := launch.InOwnGroup(cmd); err != nil {
		return err
	}
	p := &ftProc{slot: slot, replacement: replacement, cmd: cmd, tail: &tailWriter{max: 8 << 10}}
	if o.job.verbose {
		p.tail.forward = &prefixWriter{w: d.stderr, mu: &d.stderrMu}
	}
	cmd.Stderr = p.tail
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.pid, p.started, p.running = cmd.Process.Pid, time.Now(), true
	p.tail.setPrefix(fmt.Sprintf("[worker %d pid %d] ", slot, p.pid))
	d.procs = append(d.procs, p)
	d.slots[slot] = p
	d.readers.Add(1)
	go func() {
		defer d.readers.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			line := slices.Clone(sc.Bytes())
			ev := ftEvent{p: p, line: line}
			ev.err = json.Unmarshal(line, &ev.rec)
			d.events <- ev
		}
		cmd.Wait()
		d.events <- ftEvent{p: p}
	}()
	return nil
}

// line takes in a line of a worker's output.
func (d *ftDriver) line(ev ftEvent) {
	if ev.err != nil {
		d.bad = append(d.bad, fmt.Sprintf("worker %d (pid %d): %q", ev.p.slot, ev.p.pid, ev.line))
		return
	}
	if d.lines != nil {
		d.lines.Write(append(ev.line, '\n'))
	}
	d.records = append(d.records, ev.rec)
	if ev.rec.Event == "" {
		ev.p.steps++
		ev.p.full = ev.p.full || ev.rec.Contributors == d.o.np
	}
}

func (d *ftDriver) exited(p *ftProc) {
	p.running = false
	p.status = p.cmd.ProcessState.String()
}

func (d *ftDriver) live() int {
	n := 0
	for _, p := range d.procs {
		if p.running {
			n++
		}
	}
	return n
}

func (d *ftDriver) killAll() {
	for _, p := range d.procs {
		if p.running {
			launch.SignalGroup(p.pid, syscall.SIGKILL)
		}
	}
}

// reap waits for every worker to exit.
func (d *ftDriver) reap() {
	for d.live() > 0 {
		if ev := <-d.events; ev.line == nil {
			d.exited(ev.p)
		}
	}
	d.readers.Wait()
}

// kill SIGKILLs the next member in slot order, from *next, and returns
// the fault, or nil if no worker is a member now.
func (d *ftDriver) kill(next *int) *ftFault {
	np := len(d.slots)
	for i := range np {
		s := (*next + i) % np
		p := d.slots[s]
		if p == nil || !p.running || p.killed || p.steps == 0 {
			continue
		}
		*next = s + 1
		p.killed = true
		launch.SignalGroup(p.pid, syscall.SIGKILL)
		f := &ftFault{Slot: s, Pid: p.pid, At: time.Now()}
		d.faults = append(d.faults, f)
		return f
	}
	fmt.Fprintln(d.stderr, "commnode bench --ft: no member to kill; skipping a fault")
	return nil
}

// regrowing reports whether a replacement has started and has yet to
// complete a step at full size.
func (d *ftDriver) regrowing() bool {
	for _, p := range d.procs {
		if p.replacement && p.running && !p.full {
			return true
		}
	}
	return false
}

func (d *ftDriver) problem(format string, a ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, a...))
}

// report analyzes the run, from t0 (the first step) to end (the stop).
func (d *ftDriver) report(t0, end, launched time.Time) *ftReport {
	o := d.o
	faults := make([]ftFault, 0, len(d.faults))
	for _, f := range d.faults {
		g := *f
		if g.Replacement == 0 {
			g.ReplacedAt = time.Time{}
		}
		faults = append(faults, g)
	}
	r := ftAnalyze(ftTimeline{NP: o.np, Start: t0, End: end, Warmup: o.warmup, Records: d.records, Faults: faults})
	r.Bytes = o.bytes
	r.ComputeMS = ms(o.compute)
	r.DurationS = o.duration.Seconds()
	r.KillEveryS = o.killEvery.Seconds()
	r.ReplaceAfterS = o.replaceAfter.Seconds()
	r.WarmupS = o.warmup.Seconds()
	origin := t0 // what times count from
	if t0.IsZero() {
		origin = launched
	} else {
		r.StartupS = t0.Sub(launched).Seconds()
	}
	for _, p := range d.procs {
		r.Workers = append(r.Workers, ftWorkerReport{
			Slot: p.slot, Pid: p.pid, Replacement: p.replacement, StartedS: p.started.Sub(origin).Seconds(),
			Steps: p.steps, Killed: p.killed, Straggler: p.straggler, Status: p.status,
		})
		if p.straggler {
			r.Stragglers++
		}
	}
	if len(d.bad) > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d lines of worker output were no step records, the first: %s", len(d.bad), d.bad[0]))
	}
	r.Problems = append(d.problems, r.Problems...)
	r.OK = len(r.Problems) == 0
	return r
}

// tailWriter keeps the last max bytes written to it, and passes them on to
// forward if set.
type tailWriter struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	forward *prefixWriter
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	if t.forward != nil {
		t.forward.Write(b)
	}
	return len(b), nil
}

func (t *tailWriter) setPrefix(prefix string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.forward != nil {
		t.forward.prefix = prefix
	}
}

// describe is the tail, set off for an error message; empty if none.
func (t *tailWriter) describe() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; its last output:\n" + s
}

// prefixWriter writes each line with a prefix.
type prefixWriter struct {
	w      io.Writer
	mu     *sync.Mutex // shared by the writers to w
	prefix string
	mid    bool // in the middle of a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	var out []byte
	for len(b) > 0 {
		if !p.mid {
			out = append(out, p.prefix...)
		}
		i := slices.Index(b, '\n')
		if i < 0 {
			out = append(out, b...)
			p.mid = true
			break
		}
		out = append(out, b[:i+1]...)
		b = b[i+1:]
		p.mid = false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w.Write(out)
	return n, nil
}
