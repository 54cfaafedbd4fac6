//go:build linux

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/quorum"
	"github.com/gocomms/gocomms/store/tcpstore"
)

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
	if code, ok := parseFlags(fs, args); !ok {
		return code
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
	defer dumpFlightRecordsOnSignal(stderr)()
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
			gocomms.WithLogger(job.logger(stderr)),
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
