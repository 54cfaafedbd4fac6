// Command train trains a small model data-parallel across the processes
// of an elastic job (goroutines of this one here), one of which crashes
// mid-run: the others finish that step without it and train on, and
// every survivor ends with the same model.
//
// Each step, every process computes the gradient of its share of the
// batch; the gradients are flattened into buckets, each averaged over the
// processes by the elastic all-reduce as soon as backpropagation has
// finished it, while backpropagation goes on into the layers below.
//
//	go run ./examples/train
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/quorum"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

func main() {
	o := defaults
	flag.IntVar(&o.processes, "processes", o.processes, "processes at the start")
	flag.IntVar(&o.epochs, "epochs", o.epochs, "passes over the data set")
	flag.IntVar(&o.crashAt, "crash-at", o.crashAt, "the step at which the last process crashes; -1 for none")
	flag.Uint64Var(&o.seed, "seed", o.seed, "seed of the data set and the initial model")
	flag.Parse()
	if _, err := train(context.Background(), os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type options struct {
	processes int
	epochs    int
	crashAt   int // the step at which the last process crashes; -1 for none
	seed      uint64
}

var defaults = options{processes: 4, epochs: 10, crashAt: 3*stepsPerEpoch + 5, seed: 1}

// The model, y = w2·tanh(W1 x + b1) + b2, and its training.
const (
	inputs        = 8
	hidden        = 16
	samples       = 768
	batch         = 48 // samples a step, over all processes: 4, 3, 2 or 1 share it evenly
	stepsPerEpoch = samples / batch
	rate          = 0.2 // of plain SGD
	bucketCap     = 32  // gradient elements a bucket takes before it is closed, as DDP's bucket_cap_mb
)

// The parameters lie in one vector, layer by layer, so that the gradients
// of adjacent parameters, and so every bucket, are a range of the
// gradient vector, all-reduced in place.
const (
	offW1   = 0
	offB1   = offW1 + hidden*inputs
	offW2   = offB1 + hidden
	offB2   = offW2 + hidden
	nParams = offB2 + 1
)

// params are the ranges of the parameters in the vector, in forward
// order, numbered as below.
var params = [][2]int{pW1: {offW1, offB1}, pB1: {offB1, offW2}, pW2: {offW2, offB2}, pB2: {offB2, nParams}}

const (
	pW1 = iota
	pB1
	pW2
	pB2
)

// bucketsOf groups the parameters into buckets in the order
// backpropagation finishes their gradients, last layer first, closing a
// bucket once it holds bucketCap elements. It returns, for each
// parameter, the bucket its gradient completes, if any.
func bucketsOf() map[int][2]int {
	completes := map[int][2]int{}
	hi := nParams
	for p := len(params) - 1; p >= 0; p-- {
		if lo := params[p][0]; hi-lo >= bucketCap || p == 0 {
			completes[p] = [2]int{lo, hi}
			hi = lo
		}
	}
	return completes
}

// result is what a run saw.
type result struct {
	losses  []float64         // the mean squared error over the data set: at the start, then after each epoch
	changes []change          // the membership changes, in order
	models  map[int][]float64 // each survivor's final parameters, by process
}

// change is a step that fewer processes contributed to than the last.
type change struct{ step, from, to int }

// job is a run's processes, the data they share and what they report.
type job struct {
	o       options
	xs      [][]float64
	ys      []float64
	initial []float64
	net     transport.Network
	cfg     gocomms.ElasticConfig

	mu  sync.Mutex
	w   io.Writer
	res result
}

// train runs o.processes processes of an elastic job, printing to w the
// loss after each epoch and the membership changes.
func train(ctx context.Context, w io.Writer, o options) (result, error) {
	j := &job{
		o:   o,
		net: transport.NewInproc(),
		cfg: gocomms.ElasticConfig{
			Quorum: quorum.Config{Store: store.NewMemory(), Job: "train"},
			Expect: o.processes,
		},
		w:   w,
		res: result{models: map[int][]float64{}},
	}
	j.xs, j.ys, j.initial = dataset(o.seed)
	j.res.losses = []float64{loss(j.initial, j.xs, j.ys)}
	fmt.Fprintf(w, "%d processes, %d parameters in %d buckets, %d steps an epoch\n", o.processes, nParams, len(bucketsOf()), stepsPerEpoch)
	fmt.Fprintf(w, "epoch %2d  loss %.5f\n", 0, j.res.losses[0])
	errs := make([]error, o.processes)
	var wg sync.WaitGroup
	for id := range o.processes {
		wg.Go(func() { errs[id] = j.process(ctx, id) })
	}
	wg.Wait()
	return j.res, errors.Join(errs...)
}

// dataset draws inputs from a standard normal and labels them with a
// random teacher network of the model's shape, which the model can thus
// fit; it also draws the model's initial parameters. Every process
// would draw the same from the same seed.
func dataset(seed uint64) (xs [][]float64, ys, initial []float64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	draw := func(scale float64) []float64 {
		v := make([]float64, nParams)
		for i := range v {
			fanIn := float64(inputs)
			if i >= offW2 {
				fanIn = hidden
			}
			v[i] = rng.NormFloat64() * scale / math.Sqrt(fanIn)
		}
		return v
	}
	teacher := draw(2)
	for range samples {
		x := make([]float64, inputs)
		for k := range x {
			x[k] = rng.NormFloat64()
		}
		xs = append(xs, x)
		ys = append(ys, forward(teacher, x, nil))
	}
	return xs, ys, draw(1)
}

// forward returns the model's output for x, keeping the hidden layer's
// activations in h if it is not nil.
func forward(theta, x, h []float64) float64 {
	y := theta[offB2]
	for j := range hidden {
		a := theta[offB1+j]
		for k, xk := range x {
			a += theta[offW1+j*inputs+k] * xk
		}
		a = math.Tanh(a)
		if h != nil {
			h[j] = a
		}
		y += theta[offW2+j] * a
	}
	return y
}

// loss is the mean squared error of the model over xs.
func loss(theta []float64, xs [][]float64, ys []float64) float64 {
	sum := 0.0
	for i, x := range xs {
		d := forward(theta, x, nil) - ys[i]
		sum += d * d
	}
	return sum / float64(len(xs))
}

// backward writes into grad the gradient of the mean squared error over
// the samples idx, parameter by parameter from the last layer down,
// calling done(p) once parameter p's gradient is complete.
func (j *job) backward(theta, grad []float64, idx []int, done func(p int)) {
	h := make([][]float64, len(idx))
	d := make([]float64, len(idx)) // the loss's derivative by each output
	for s, i := range idx {
		h[s] = make([]float64, hidden)
		d[s] = 2 * (forward(theta, j.xs[i], h[s]) - j.ys[i]) / float64(len(idx))
	}
	clear(grad)
	for s := range idx {
		grad[offB2] += d[s]
		for k := range hidden {
			grad[offW2+k] += d[s] * h[s][k]
		}
	}
	done(pB2)
	done(pW2)
	delta := make([][]float64, len(idx)) // by each hidden pre-activation
	for s := range idx {
		delta[s] = make([]float64, hidden)
		for k := range hidden {
			delta[s][k] = d[s] * theta[offW2+k] * (1 - h[s][k]*h[s][k])
			grad[offB1+k] += delta[s][k]
		}
	}
	done(pB1)
	for s, i := range idx {
		for k := range hidden {
			for m, x := range j.xs[i] {
				grad[offW1+k*inputs+m] += delta[s][k] * x
			}
		}
	}
	done(pW1)
}

// process is one process of the job: it joins, trains, and crashes at
// o.crashAt if it is the last one.
func (j *job) process(ctx context.Context, id int) error {
	// The failure detector finds a process that hangs rather than exits.
	e, err := gocomms.JoinElastic(ctx, gocomms.NativeBackend, gocomms.CPU, "train", j.cfg,
		gocomms.WithNetwork(j.net), gocomms.WithFailureDetector(100*time.Millisecond, time.Second))
	if err != nil {
		return fmt.Errorf("process %d: %w", id, err)
	}
	theta := slices.Clone(j.initial)
	grad := make([]float64, nParams)
	buckets := bucketsOf()
	r := startReducer(ctx, e, len(buckets))
	defer r.stop()
	members := e.Comm().Size()
	for step := range j.o.epochs * stepsPerEpoch {
		if id == j.o.processes-1 && step == j.o.crashAt {
			j.report(nil, "step %d: process %d crashes\n", step, id)
			// A crashed process's connections close: aborting releases
			// them, as its exit would.
			e.Comm().Abort(errors.New("simulated crash"))
			e.Finalize(ctx)
			return nil
		}
		// The batch is shared among the members of now, by rank.
		c := e.Comm()
		first := step % stepsPerEpoch * batch
		var idx []int
		for i := c.Rank(); i < batch; i += c.Size() {
			idx = append(idx, first+i)
		}
		j.backward(theta, grad, idx, func(p int) {
			if b, ok := buckets[p]; ok {
				r.todo <- grad[b[0]:b[1]]
			}
		})
		contributors, err := r.wait(len(buckets))
		if err != nil {
			return fmt.Errorf("process %d, step %d: %w", id, step, err)
		}
		for i, g := range grad {
			theta[i] -= rate * g
		}
		lead := e.Comm().Rank() == 0 // one survivor reports for all
		if n := len(contributors); n != members {
			if lead {
				j.report(func(r *result) { r.changes = append(r.changes, change{step, members, n}) },
					"step %d: %d of %d processes contributed; training goes on with %d\n", step, n, members, e.Comm().Size())
			}
			members = n
		}
		if (step+1)%stepsPerEpoch == 0 && lead {
			l := loss(theta, j.xs, j.ys)
			j.report(func(r *result) { r.losses = append(r.losses, l) },
				"epoch %2d  loss %.5f  processes %d\n", (step+1)/stepsPerEpoch, l, members)
		}
	}
	j.report(func(r *result) { r.models[id] = theta }, "")
	return e.Finalize(ctx)
}

// report prints to the run's writer and records in its result, under one
// lock: the process that reports changes when the one that did crashes.
func (j *job) report(record func(*result), format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintf(j.w, format, args...)
	if record != nil {
		record(&j.res)
	}
}

// reducer all-reduces buckets on a goroutine of its own, in the order
// they come, so that a bucket's all-reduce overlaps the backpropagation
// of the layers below it, as DDP's buckets do. An Elastic is not safe
// for concurrent use: while a step's buckets are out, only this
// goroutine uses it.
type reducer struct {
	todo chan []float64
	done chan reduction
}

type reduction struct {
	contributors []int
	err          error
}

func startReducer(ctx context.Context, e *gocomms.Elastic, buckets int) *reducer {
	r := &reducer{todo: make(chan []float64, buckets), done: make(chan reduction, buckets)}
	go func() {
		for b := range r.todo {
			// Avg divides by the processes that contributed: those of
			// the communicator it completed on.
			contributors, err := e.AllReduce(ctx, gocomms.FromSlice(b), gocomms.Avg)
			r.done <- reduction{contributors, err}
		}
	}()
	return r
}

// wait waits for n buckets and returns the processes that contributed to
// the last, or the first error.
func (r *reducer) wait(n int) ([]int, error) {
	var last reduction
	var errs []error
	for range n {
		last = <-r.done
		errs = append(errs, last.err)
	}
	return last.contributors, errors.Join(errs...)
}

func (r *reducer) stop() { close(r.todo) }
