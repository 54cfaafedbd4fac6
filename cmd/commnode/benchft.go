//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/quorum"
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
	fs := flag.NewFlagSet("bench --ft", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, benchFTUsage)
		fs.PrintDefaults()
	}
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
	if err := fs.Parse(args); err != nil {
		return o, 2
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

// ---------------------------------------------------------------------
// Worker

// ftWorkerCommand is one worker: it joins the elastic job and trains
// until the driver tells it to stop.
func ftWorkerCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench --ft-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var job jobFlags
	job.register(fs)
	fs.Bool("ft-worker", true, "run as a worker of commnode bench --ft")
	size := int64(4 << 20)
	fs.Var(bytesFlag{&size}, "b", "bytes all-reduced per step")
	compute := fs.Duration("compute", 20*time.Millisecond, "simulated compute per step")
	joinTimeout := fs.Duration("join-timeout", 5*time.Second, "membership round timeout")
	growEvery := fs.Duration("grow-every", 100*time.Millisecond, "how often rank 0 looks for newcomers")
	expect := fs.Int("expect", 0, "members of the first round (0: a replacement)")
	minMembers := fs.Int("min", 1, "fewest members a round closes with")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if size < 4 || size%4 != 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "commnode bench --ft-worker: bad -b or arguments")
		return 2
	}
	addr, ok := os.LookupEnv("MASTER_ADDR")
	port, ok2 := os.LookupEnv("MASTER_PORT")
	if !ok || !ok2 {
		fmt.Fprintln(stderr, "commnode bench --ft-worker: MASTER_ADDR and MASTER_PORT must name the driver's store")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := tcpstore.Dial(ctx, net.JoinHostPort(addr, port), tcpstore.WithTimeout(30*time.Second))
	if err != nil {
		fmt.Fprintln(stderr, "commnode bench --ft-worker:", err)
		return 1
	}
	defer st.Close()

	w := &ftWorker{
		out:     stdout,
		stopped: make(chan struct{}),
		n:       int(size / 4),
		compute: *compute,
		name:    job.name,
		cfg: gocomms.ElasticConfig{
			Quorum:    quorum.Config{Store: st, Job: job.name, Min: *minMembers, JoinTimeout: *joinTimeout},
			GrowEvery: *growEvery,
		},
		opts: []gocomms.Option{
			gocomms.WithTimeout(job.timeout),
			gocomms.WithLogger(newLogger(stderr, job.verbose)),
			gocomms.WithFailureDetector(job.heartbeat, job.silence),
			gocomms.WithAbortProcessOnError(false),
		},
	}
	// The stop key ends the run; losing the store means the driver is
	// gone, and so must this worker be.
	go func() {
		err := st.Wait(ctx, ftStopKey)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "commnode bench --ft-worker: lost the driver's store:", err)
			os.Exit(1)
		}
		w.stop.Store(true)
		close(w.stopped)
	}()
	if err := w.run(ctx, *expect); err != nil {
		fmt.Fprintln(stderr, "commnode bench --ft-worker:", err)
		return 1
	}
	return 0
}

// ftWorker is a worker's training state.
type ftWorker struct {
	out     io.Writer
	stop    atomic.Bool   // the driver set the stop key
	stopped chan struct{} // closed with stop
	n       int           // float32 elements of the gradient and parameters
	compute time.Duration
	name    string
	cfg     gocomms.ElasticConfig
	opts    []gocomms.Option
}

// join joins the job expecting expect members; it gives up when the run
// stops first, returning nil.
func (w *ftWorker) join(ctx context.Context, expect int) (*gocomms.Elastic, error) {
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.stopped:
			cancel()
		case <-jctx.Done():
		}
	}()
	cfg := w.cfg
	cfg.Expect = expect
	e, err := gocomms.JoinElastic(jctx, gocomms.NativeBackend, gocomms.CPU, w.name, cfg, w.opts...)
	if err != nil && w.stop.Load() {
		return nil, nil
	}
	return e, err
}

// run trains: each step heals newcomers, computes, all-reduces a gradient
// of ones with a stop vote appended, checks the sum and applies it.
func (w *ftWorker) run(ctx context.Context, expect int) error {
	params := make([]float32, w.n)
	counter := []int64{0}
	grad := make([]float32, w.n+1) // the last element is the stop vote
	pt, ct, gt := gocomms.FromSlice(params), gocomms.FromSlice(counter), gocomms.FromSlice(grad)
	pid := os.Getpid()

	e, err := w.join(ctx, expect)
	if e == nil {
		return err
	}
	// rejoin leaves after an error this member got, and joins again as a
	// newcomer: the members found it failed, or it lost them.
	rejoin := func(cause error) error {
		if ctx.Err() != nil {
			return cause
		}
		if w.stop.Load() {
			// The others may have left at the last step already.
			ftFinish(e)
			e = nil
			return nil
		}
		w.emit(ftRecord{T: time.Now().UnixNano(), Step: counter[0], Pid: pid, Event: "rejoin", Err: cause.Error()})
		e.Comm().Abort(cause)
		ftFinish(e)
		if e, err = w.join(ctx, 0); e == nil {
			return err
		}
		return nil
	}
	for {
		if err := e.Heal(ctx, pt, ct); err != nil {
			if err := rejoin(fmt.Errorf("heal: %w", err)); err != nil || e == nil {
				return err
			}
			continue
		}
		step := counter[0]
		time.Sleep(w.compute)
		for i := range w.n {
			grad[i] = 1
		}
		grad[w.n] = 0
		if w.stop.Load() && e.Comm().Rank() == 0 {
			grad[w.n] = 1
		}
		contributors, err := e.AllReduce(ctx, gt, gocomms.Sum)
		if err != nil {
			if err := rejoin(fmt.Errorf("step %d: %w", step, err)); err != nil || e == nil {
				return err
			}
			continue
		}
		k := float32(len(contributors))
		var wrong int64
		// The parameters count the steps: each applies the mean of the
		// gradients, one. A newcomer's came from Heal.
		for i, g := range grad[:w.n] {
			if g != k || params[i] != float32(step) {
				wrong++
			}
			params[i] += g / k
		}
		counter[0]++
		w.emit(ftRecord{T: time.Now().UnixNano(), Step: step, Contributors: len(contributors),
			Size: e.Comm().Size(), Rank: e.Comm().Rank(), Pid: pid, Wrong: wrong})
		if grad[w.n] > 0 {
			ftFinish(e)
			return nil
		}
	}
}

func (w *ftWorker) emit(r ftRecord) {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a struct of numbers and strings always marshals
	}
	w.out.Write(append(b, '\n'))
}

// ftFinish finalizes e, for at most ftFinalize.
func ftFinish(e *gocomms.Elastic) {
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ftFinalize)
		defer cancel()
		e.Finalize(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(ftFinalize + time.Second):
	}
}

// ---------------------------------------------------------------------
// Driver

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

	o := d.o
	launched := time.Now()
	d.slots = make([]*ftProc, o.np)
	for s := range o.np {
		if err := d.start(s, false); err != nil {
			d.killAll()
			d.reap()
			return nil, err
		}
	}

	var (
		t0       time.Time // the first step's completion
		end      time.Time // --duration after t0
		settle   time.Time // the latest the run waits past end for replacements
		nextKill time.Time
		stopAt   time.Time // when the stop key was set
		killAt   time.Time // when stragglers are killed
		pending  []*ftFault
		nextSlot int
		startup  = launched.Add(o.joinTimeout + ftStartup)
		stopping bool
	)
	beginStop := func() {
		if stopping {
			return
		}
		stopping = true
		stopAt = time.Now()
		killAt = stopAt.Add(ftGrace)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := st.Set(sctx, ftStopKey, []byte("1")); err != nil {
			fmt.Fprintln(d.stderr, "commnode bench --ft: telling the workers to stop:", err)
			d.killAll()
		}
	}
	done := ctx.Done()
	for d.live() > 0 {
		now := time.Now()
		// What is due now.
		switch {
		case stopping:
			if now.After(killAt) {
				for _, p := range d.procs {
					if p.running && !p.straggler {
						p.straggler = true
						syscall.Kill(-p.pid, syscall.SIGKILL)
					}
				}
			}
		case t0.IsZero():
			if now.After(startup) {
				d.problem("no step completed within %v of the start", startup.Sub(launched).Round(time.Millisecond))
				beginStop()
			}
		default:
			for len(pending) > 0 && !now.Before(pending[0].ReplacedAt) {
				f := pending[0]
				pending = pending[1:]
				if err := d.start(f.Slot, true); err != nil {
					d.problem("starting a replacement for worker %d: %v", f.Slot, err)
					beginStop()
					break
				}
				f.Replacement, f.ReplacedAt = d.slots[f.Slot].pid, d.slots[f.Slot].started
			}
			if !stopping && !nextKill.IsZero() && !now.Before(nextKill) && now.Before(end) {
				if f := d.kill(&nextSlot); f != nil {
					f.ReplacedAt = f.At.Add(o.replaceAfter) // when it is due
					pending = append(pending, f)
				}
				nextKill = nextKill.Add(o.killEvery)
			}
			if !stopping && !now.Before(end) {
				if settle.IsZero() {
					settle = end.Add(o.replaceAfter + o.joinTimeout + ftSettle)
				}
				if len(pending) == 0 && !d.regrowing() || now.After(settle) {
					beginStop()
				}
			}
		}

		// The next thing due.
		var next time.Time
		earliest := func(t time.Time) {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		switch {
		case stopping:
			earliest(killAt)
			if now.After(killAt) {
				earliest(now.Add(time.Second))
			}
		case t0.IsZero():
			earliest(startup)
		default:
			if len(pending) > 0 {
				earliest(pending[0].ReplacedAt)
			}
			if nextKill.Before(end) {
				earliest(nextKill)
			}
			earliest(end)
			if now.After(end) {
				earliest(now.Add(10 * time.Millisecond))
			}
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case ev := <-d.events:
			if ev.line == nil {
				d.exited(ev.p)
				switch p := ev.p; {
				case p.killed || p.straggler:
				case !stopping:
					d.problem("worker %d (pid %d) exited outside the fault plan: %s%s", p.slot, p.pid, p.status, p.tail.describe())
					beginStop()
				case !p.cmd.ProcessState.Success():
					d.problem("worker %d (pid %d) ended with %s%s", p.slot, p.pid, p.status, p.tail.describe())
				}
				break
			}
			d.line(ev)
			if ev.err == nil && ev.rec.Event == "" {
				if t0.IsZero() {
					t0 = time.Unix(0, ev.rec.T)
					end = t0.Add(o.duration)
					if o.killEvery > 0 {
						nextKill = t0.Add(o.killEvery)
					}
				}
			}
		case <-done:
			done = nil
			d.problem("interrupted")
			beginStop()
		case <-timer.C:
		}
		timer.Stop()
	}
	// Each worker's lines came before its exit.
	d.readers.Wait()
	return d.report(t0, stopAt, launched), nil
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
	}
	if o.job.verbose {
		args = append(args, "-v")
	}
	cmd := exec.Command(d.exe, args...)
	cmd.Env = d.env
	// Its own process group, so that a terminal's Ctrl-C reaches only the
	// driver, which stops the run in order; killed if the driver dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
			syscall.Kill(-p.pid, syscall.SIGKILL)
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
		syscall.Kill(-p.pid, syscall.SIGKILL)
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

// ---------------------------------------------------------------------
// Report

// ftTimeline is what a run produced, for ftAnalyze.
type ftTimeline struct {
	NP         int
	Start, End time.Time // the first step's completion; when the workers were told to stop
	Warmup     time.Duration
	Records    []ftRecord // in the order each worker printed them
	Faults     []ftFault  // in the order of the kills
}

// ftReport is the result of a run; --json prints it.
type ftReport struct {
	Ranks         int     `json:"ranks"`
	Bytes         int64   `json:"bytes"`
	ComputeMS     float64 `json:"compute_ms"`
	DurationS     float64 `json:"duration_s"`
	KillEveryS    float64 `json:"kill_every_s"`
	ReplaceAfterS float64 `json:"replace_after_s"`
	WarmupS       float64 `json:"warmup_s"`
	StartupS      float64 `json:"startup_s"` // from starting the workers to the first step
	EndS          float64 `json:"end_s"`     // when the workers were told to stop, from the first step

	FailureFree  ftWindow `json:"failure_free"`
	UnderFaults  ftWindow `json:"under_faults"`
	Ratio        float64  `json:"ratio"` // under_faults.rate / failure_free.rate
	MedianStepMS float64  `json:"median_step_ms"`

	Faults []ftFaultReport `json:"faults"`

	Steps             int   `json:"steps"` // distinct steps completed
	FirstStep         int64 `json:"first_step"`
	LastStep          int64 `json:"last_step"`
	FinalContributors int   `json:"final_contributors"`
	Wrong             int64 `json:"wrong"`        // wrong elements, over every worker and step
	Inconsistent      int   `json:"inconsistent"` // see ftAnalyze
	Rejoins           int   `json:"rejoins"`
	Stragglers        int   `json:"stragglers"` // workers killed past the grace period at the end

	Workers  []ftWorkerReport `json:"workers"`
	OK       bool             `json:"ok"`
	Problems []string         `json:"problems,omitempty"`
}

// ftWindow is a stretch of the run and the steps completed in it.
type ftWindow struct {
	FromS float64 `json:"from_s"` // from the first step
	ToS   float64 `json:"to_s"`
	Steps int     `json:"steps"`
	Rate  float64 `json:"rate"` // steps per second
}

// ftFaultReport is one fault: the kill, the recovery and the regrowth.
type ftFaultReport struct {
	AtS  float64 `json:"at_s"` // the kill, from the first step
	Slot int     `json:"slot"`
	Pid  int     `json:"pid"`
	// RecoveryMS is from the kill to the first step completed after it,
	// less the median failure-free step; null if no step came.
	RecoveryMS   *float64 `json:"recovery_ms"`
	RecoveryStep int64    `json:"recovery_step"`
	Contributors int      `json:"contributors"` // of the recovery step
	// LongestStepMS is the longest step from the recovery step to the
	// first at full size again: the one that absorbed the failure.
	LongestStepMS float64 `json:"longest_step_ms"`
	// ReplacedAtS is when the replacement started; null if none did.
	ReplacedAtS    *float64 `json:"replaced_at_s"`
	ReplacementPid int      `json:"replacement_pid,omitempty"`
	// RegrowMS is from the replacement's start to the first step at full
	// size it took part in; null if it never did.
	RegrowMS *float64 `json:"regrow_ms"`
}

// ftWorkerReport is a worker process and how it ended.
type ftWorkerReport struct {
	Slot        int     `json:"slot"`
	Pid         int     `json:"pid"`
	Replacement bool    `json:"replacement"`
	StartedS    float64 `json:"started_s"`
	Steps       int     `json:"steps"`
	Killed      bool    `json:"killed"`
	Straggler   bool    `json:"straggler"`
	Status      string  `json:"status"`
}

// ftStep is a step as the first worker to complete it reported it.
type ftStep struct {
	Step         int64
	T            time.Time
	Contributors int
}

// ftAnalyze computes the report's figures. Steps are deduplicated by
// number, each taking its earliest completion. Inconsistent counts what
// a correct run never shows: a step whose reports disagree on the
// contributors, a worker whose steps do not strictly increase, a step
// number missing between the first and the last, and a replacement whose
// first step is not past the last step completed before it started.
func ftAnalyze(tl ftTimeline) *ftReport {
	r := &ftReport{Ranks: tl.NP, FirstStep: -1, LastStep: -1}
	byStep := map[int64]*ftStep{}
	contrib := map[int64]map[int]bool{}
	last := map[int]int64{}
	firstOf := map[int]int64{}
	for _, rec := range tl.Records {
		if rec.Event != "" {
			if rec.Event == "rejoin" {
				r.Rejoins++
			}
			continue
		}
		r.Wrong += rec.Wrong
		if l, ok := last[rec.Pid]; ok && rec.Step <= l {
			r.Inconsistent++
		}
		last[rec.Pid] = rec.Step
		if _, ok := firstOf[rec.Pid]; !ok {
			firstOf[rec.Pid] = rec.Step
		}
		t := time.Unix(0, rec.T)
		s := byStep[rec.Step]
		if s == nil {
			s = &ftStep{Step: rec.Step, T: t, Contributors: rec.Contributors}
			byStep[rec.Step] = s
			contrib[rec.Step] = map[int]bool{}
		} else if t.Before(s.T) {
			s.T, s.Contributors = t, rec.Contributors
		}
		contrib[rec.Step][rec.Contributors] = true
	}
	steps := make([]ftStep, 0, len(byStep))
	for n, s := range byStep {
		steps = append(steps, *s)
		if len(contrib[n]) > 1 {
			r.Inconsistent++
		}
	}
	slices.SortFunc(steps, func(a, b ftStep) int { return cmp.Compare(a.Step, b.Step) })
	index := make(map[int64]int, len(steps))
	for i, s := range steps {
		index[s.Step] = i
	}
	r.Steps = len(steps)
	if len(steps) > 0 {
		r.FirstStep, r.LastStep = steps[0].Step, steps[len(steps)-1].Step
		r.FinalContributors = steps[len(steps)-1].Contributors
		r.Inconsistent += int(r.LastStep-r.FirstStep+1) - len(steps)
	}
	if tl.Start.IsZero() {
		return r
	}
	since := func(t time.Time) float64 { return t.Sub(tl.Start).Seconds() }
	r.EndS = since(tl.End)

	from := tl.Start.Add(tl.Warmup)
	firstKill := tl.End
	if len(tl.Faults) > 0 {
		firstKill = tl.Faults[0].At
	}
	window := func(a, b time.Time, closed bool) ftWindow {
		w := ftWindow{FromS: since(a), ToS: since(b)}
		for _, s := range steps {
			if !s.T.Before(a) && (s.T.Before(b) || closed && s.T.Equal(b)) {
				w.Steps++
			}
		}
		if d := b.Sub(a).Seconds(); d > 0 {
			w.Rate = float64(w.Steps) / d
		}
		return w
	}
	r.FailureFree = window(from, firstKill, false)
	r.UnderFaults = window(from, tl.End, true)
	if r.FailureFree.Rate > 0 {
		r.Ratio = r.UnderFaults.Rate / r.FailureFree.Rate
	}
	var gaps []time.Duration
	for i := 1; i < len(steps); i++ {
		a, b := steps[i-1], steps[i]
		if b.Step == a.Step+1 && !a.T.Before(from) && b.T.Before(firstKill) {
			gaps = append(gaps, b.T.Sub(a.T))
		}
	}
	median := medianDuration(gaps)
	r.MedianStepMS = ms(median)

	for _, f := range tl.Faults {
		fr := ftFaultReport{AtS: since(f.At), Slot: f.Slot, Pid: f.Pid, RecoveryStep: -1}
		recovery := slices.IndexFunc(steps, func(s ftStep) bool { return s.T.After(f.At) })
		if recovery >= 0 {
			s := steps[recovery]
			fr.RecoveryMS = ptr(ms(max(0, s.T.Sub(f.At)-median)))
			fr.RecoveryStep, fr.Contributors = s.Step, s.Contributors
		}
		regrown := len(steps) - 1 // the index of the step at full size again
		if fr.RecoveryMS == nil {
			r.Problems = append(r.Problems, fmt.Sprintf("no step completed after the kill at %.2fs", fr.AtS))
		}
		if f.Replacement != 0 {
			fr.ReplacedAtS, fr.ReplacementPid = ptr(since(f.ReplacedAt)), f.Replacement
			if first, ok := firstOf[f.Replacement]; ok {
				var before int64 = -1
				for _, s := range steps {
					if s.T.Before(f.ReplacedAt) {
						before = max(before, s.Step)
					}
				}
				if first <= before {
					r.Inconsistent++
				}
			}
			for _, rec := range tl.Records {
				if rec.Pid == f.Replacement && rec.Event == "" && rec.Contributors == tl.NP {
					fr.RegrowMS = ptr(ms(byStep[rec.Step].T.Sub(f.ReplacedAt)))
					regrown = index[rec.Step]
					break
				}
			}
			if fr.RegrowMS == nil {
				r.Problems = append(r.Problems, fmt.Sprintf("the replacement started at %.2fs never took part in a step at full size", *fr.ReplacedAtS))
			}
		}
		if recovery >= 0 {
			var longest time.Duration
			for i := max(recovery, 1); i <= regrown; i++ {
				if steps[i].Step == steps[i-1].Step+1 {
					longest = max(longest, steps[i].T.Sub(steps[i-1].T))
				}
			}
			fr.LongestStepMS = ms(longest)
		}
		r.Faults = append(r.Faults, fr)
	}
	if r.Wrong > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d wrong elements", r.Wrong))
	}
	if r.Inconsistent > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d inconsistencies between the workers' steps", r.Inconsistent))
	}
	return r
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }

// writeTable prints the report for people.
func (r *ftReport) writeTable(w io.Writer) {
	fmt.Fprintf(w, "# gocomms bench --ft: %d ranks, %d B float32 all-reduced per step, compute %v\n",
		r.Ranks, r.Bytes, time.Duration(r.ComputeMS*float64(time.Millisecond)))
	plan, faults := "no faults", ""
	if r.KillEveryS > 0 {
		faults = "under faults"
		plan = fmt.Sprintf("a worker SIGKILLed every %v, replaced after %v",
			seconds(r.KillEveryS), seconds(r.ReplaceAfterS))
	}
	fmt.Fprintf(w, "# %v from the first step (%.2fs after start), %s; rates leave out the first %v\n",
		seconds(r.DurationS), r.StartupS, plan, seconds(r.WarmupS))
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# %-14s %9s %9s %8s %9s\n", "window", "from (s)", "to (s)", "steps", "steps/s")
	for _, x := range []struct {
		name string
		w    ftWindow
	}{{"failure-free", r.FailureFree}, {cmp.Or(faults, "whole run"), r.UnderFaults}} {
		fmt.Fprintf(w, "  %-14s %9.2f %9.2f %8d %9.2f\n", x.name, x.w.FromS, x.w.ToS, x.w.Steps, x.w.Rate)
	}
	fmt.Fprintf(w, "# kept %.1f%% of the failure-free step rate (goal: 90%%); median failure-free step %.1f ms\n",
		100*r.Ratio, r.MedianStepMS)
	if len(r.Faults) > 0 {
		fmt.Fprintln(w, "#")
		fmt.Fprintf(w, "# %5s %8s %5s %8s %13s %7s %12s %13s %12s %11s\n",
			"fault", "at (s)", "slot", "pid", "recovery (ms)", "step", "contributors", "longest (ms)", "replaced (s)", "regrow (ms)")
		opt := func(p *float64, format string) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprintf(format, *p)
		}
		for i, f := range r.Faults {
			step, longest := "-", "-"
			if f.RecoveryMS != nil {
				step, longest = strconv.FormatInt(f.RecoveryStep, 10), fmt.Sprintf("%.1f", f.LongestStepMS)
			}
			fmt.Fprintf(w, "  %5d %8.2f %5d %8d %13s %7s %12d %13s %12s %11s\n", i+1, f.AtS, f.Slot, f.Pid,
				opt(f.RecoveryMS, "%.1f"), step, f.Contributors, longest, opt(f.ReplacedAtS, "%.2f"), opt(f.RegrowMS, "%.1f"))
		}
	}
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# steps %d (%d to %d), final contributors %d, wrong elements %d, inconsistencies %d, rejoins %d, stragglers %d\n",
		r.Steps, r.FirstStep, r.LastStep, r.FinalContributors, r.Wrong, r.Inconsistent, r.Rejoins, r.Stragglers)
	if r.OK {
		fmt.Fprintln(w, "# OK")
	} else {
		fmt.Fprintf(w, "# FAILED: %s\n", strings.Join(r.Problems, "; "))
	}
}

// seconds prints a number of seconds as a duration.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
