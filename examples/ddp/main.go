// Command ddp trains a model data-parallel, one rank per process, as
// PyTorch's DistributedDataParallel does: each rank runs forward and
// backward on its own share of the batch, and the gradients, laid out in
// buckets, are averaged over the ranks by async all-reduces issued as
// soon as backpropagation has finished each bucket, while it goes on into
// the layers below. After the last layer, the rank waits for the buckets
// and every rank takes the same step.
//
// It trains twice from the same start, with the all-reduces overlapped
// and then issued only once backpropagation is over, checks that both
// runs end with the same model on every rank, and prints what the overlap
// hid: the step's time beyond its computation, in each run.
//
//	go build -o ddp ./examples/ddp
//	go run ./cmd/commnode launch -n 2 -- ./ddp    # one rank per process
//	torchrun --nproc_per_node 2 --no_python ./ddp # as PyTorch launches
//	go run ./examples/ddp -ranks 2                # ranks in this process
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
	"github.com/gocomms/gocomms/launcher"
)

func main() {
	o := defaults
	flag.IntVar(&o.ranks, "ranks", o.ranks, "ranks in this process, when no launcher started it")
	flag.IntVar(&o.layers, "layers", o.layers, "layers of the model")
	flag.IntVar(&o.width, "width", o.width, "units per layer")
	flag.IntVar(&o.batch, "batch", o.batch, "samples a step on each rank")
	flag.IntVar(&o.steps, "steps", o.steps, "training steps of each run")
	flag.IntVar(&o.bucketLayers, "bucket-layers", o.bucketLayers, "layers' gradients per bucket")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "ddp:", err)
		os.Exit(1)
	}
}

type options struct {
	ranks        int
	layers       int
	width        int
	batch        int
	steps        int
	bucketLayers int
}

var defaults = options{ranks: 2, layers: 8, width: 192, batch: 16, steps: 40, bucketLayers: 2}

// run trains on this process's rank of a launched job, or on o.ranks ranks
// in this process, and prints rank 0's report.
func run(ctx context.Context, w io.Writer, o options) error {
	if o.layers < 1 || o.width < 1 || o.batch < 1 || o.steps < 1 || o.bucketLayers < 1 || o.ranks < 1 {
		return errors.New("every option must be positive")
	}
	if _, err := launcher.FromEnv(os.LookupEnv); err == nil { // a launcher started this process
		c, err := gocomms.NewComm(ctx, "native", gocomms.CPU, "ddp")
		if err != nil {
			return err
		}
		rep, err := compare(ctx, c, o)
		if ferr := c.Finalize(ctx); err == nil {
			err = ferr
		}
		if err == nil && c.Rank() == 0 {
			rep.print(w, c.Size())
		}
		return err
	}
	var mu sync.Mutex
	var rep0 report
	err := gocomms.RunLocal(ctx, o.ranks, func(ctx context.Context, c *gocomms.Comm) error {
		rep, err := compare(ctx, c, o)
		if c.Rank() == 0 {
			mu.Lock()
			rep0 = rep
			mu.Unlock()
		}
		return err
	})
	if err == nil {
		rep0.print(w, o.ranks)
	}
	return err
}

// report is what a rank measured in the two runs.
type report struct {
	overlapped, serial timing
	lossBefore, after  float64 // the loss at the start, and after the overlapped run
}

// timing is one run's median step and the median of its computation alone.
type timing struct{ step, compute time.Duration }

// exposed is the step's time beyond its computation: communication
// nothing hid, and waiting for the slowest rank.
func (t timing) exposed() time.Duration { return max(t.step-t.compute, 0) }

func (r report) print(w io.Writer, ranks int) {
	fmt.Fprintf(w, "%d ranks: loss %.5f at the start, %.5f after training; both runs end with the same model on every rank\n", ranks, r.lossBefore, r.after)
	fmt.Fprintf(w, "%-36s %10s %10s %10s\n", "median step", "step", "compute", "exposed")
	for _, row := range []struct {
		name string
		t    timing
	}{{"all-reduces overlapped with backward", r.overlapped}, {"all-reduces after backward", r.serial}} {
		fmt.Fprintf(w, "%-36s %10v %10v %10v\n", row.name, row.t.step.Round(time.Microsecond), row.t.compute.Round(time.Microsecond), row.t.exposed().Round(time.Microsecond))
	}
	if s := r.serial.exposed(); s > 0 {
		fmt.Fprintf(w, "the overlap hid %.0f%% of the time the all-reduces added to a step\n", 100*(1-float64(r.overlapped.exposed())/float64(s)))
	}
}

// compare trains from the same start twice, overlapped and not, and
// checks that both runs agree with each other and across the ranks.
func compare(ctx context.Context, c *gocomms.Comm, o options) (report, error) {
	var rep report
	a, b := newTrainer(c, o), newTrainer(c, o)
	rep.lossBefore = a.loss()
	var err error
	if rep.overlapped, err = a.train(ctx, true); err != nil {
		return rep, err
	}
	if rep.serial, err = b.train(ctx, false); err != nil {
		return rep, err
	}
	rep.after = a.loss()
	if !slices.Equal(a.params, b.params) {
		return rep, fmt.Errorf("rank %d: the overlapped and the serial runs end with different models", c.Rank())
	}
	// Every rank's model is the same: its checksum's spread over the
	// ranks is nothing.
	sum := float64(0)
	for i, v := range a.params {
		sum += float64(v) * float64(i%97+1)
	}
	lo, hi := gocomms.FromSlice([]float64{sum}), gocomms.FromSlice([]float64{sum})
	if err := c.AllReduce(ctx, lo, gocomms.Min); err != nil {
		return rep, err
	}
	if err := c.AllReduce(ctx, hi, gocomms.Max); err != nil {
		return rep, err
	}
	if lo.Float64At(0) != hi.Float64At(0) {
		return rep, fmt.Errorf("rank %d: the ranks' models differ", c.Rank())
	}
	return rep, nil
}

// trainer holds one rank's replica of the model, y = W_L·tanh(…tanh(W_1·x)),
// its share of the data, and the gradients' buckets.
type trainer struct {
	c      *gocomms.Comm
	o      options
	params []float32   // the layers' weights, layer l at l·width²
	grads  []float32   // the gradients, laid out in buckets: the last layers first, as backward makes them
	gradOf [][]float32 // layer l's gradient, a view of grads
	bucket [][]float32 // the buckets, views of grads
	acts   [][]float32 // layer l's input, batch × width, for backward
	delta  [2][]float32
	x, y   []float32 // this rank's share of the batch, and the targets
}

const learningRate = 0.05

func newTrainer(c *gocomms.Comm, o options) *trainer {
	n := o.width * o.width
	t := &trainer{c: c, o: o, params: make([]float32, o.layers*n), grads: make([]float32, o.layers*n)}
	// The same start on every rank, from one seed.
	init := rand.New(rand.NewPCG(1, 2))
	scale := float32(1 / math.Sqrt(float64(o.width)))
	for i := range t.params {
		t.params[i] = scale * float32(init.NormFloat64())
	}
	// Backward finishes the last layer first: its gradient leads the
	// first bucket.
	t.gradOf = make([][]float32, o.layers)
	for k := range o.layers {
		l := o.layers - 1 - k
		t.gradOf[l] = t.grads[k*n : (k+1)*n]
	}
	for k := 0; k < o.layers; k += o.bucketLayers {
		t.bucket = append(t.bucket, t.grads[k*n:min(k+o.bucketLayers, o.layers)*n])
	}
	// This rank's own samples, and the targets a fixed teacher gives them.
	data := rand.New(rand.NewPCG(3, uint64(c.Rank())))
	t.x = make([]float32, o.batch*o.width)
	t.y = make([]float32, o.batch*o.width)
	for i := range t.x {
		t.x[i] = float32(data.NormFloat64())
	}
	for i := range t.y {
		t.y[i] = float32(math.Sin(float64(t.x[i]) + float64(i%o.width)/float64(o.width)))
	}
	t.acts = make([][]float32, o.layers+1)
	for l := range t.acts {
		t.acts[l] = make([]float32, o.batch*o.width)
	}
	t.delta = [2][]float32{make([]float32, o.batch*o.width), make([]float32, o.batch*o.width)}
	return t
}

func (t *trainer) weights(l int) []float32 {
	n := t.o.width * t.o.width
	return t.params[l*n : (l+1)*n]
}

// forward fills acts and returns the mean squared error on this rank's
// samples.
func (t *trainer) forward() float64 {
	copy(t.acts[0], t.x)
	w := t.o.width
	for l := range t.o.layers {
		in, out, wl := t.acts[l], t.acts[l+1], t.weights(l)
		for b := range t.o.batch {
			row := in[b*w : (b+1)*w]
			for j := range w {
				s := float32(0)
				for i, v := range row {
					s += v * wl[i*w+j]
				}
				if l < t.o.layers-1 {
					s = float32(math.Tanh(float64(s)))
				}
				out[b*w+j] = s
			}
		}
	}
	loss := 0.0
	for i, v := range t.acts[t.o.layers] {
		d := float64(v - t.y[i])
		loss += d * d
	}
	return loss / float64(len(t.y))
}

// loss is the mean squared error over every rank's samples.
func (t *trainer) loss() float64 {
	l := gocomms.FromSlice([]float64{t.forward()})
	if err := t.c.AllReduce(context.Background(), l, gocomms.Avg); err != nil {
		return math.NaN()
	}
	return l.Float64At(0)
}

// backward computes layer l's gradient into gradOf[l] for l from the last
// down, calling done(l) after each.
func (t *trainer) backward(done func(l int)) {
	w, batch := t.o.width, t.o.batch
	d := t.delta[0]
	top := t.acts[t.o.layers]
	for i := range d {
		d[i] = 2 * (top[i] - t.y[i]) / float32(len(t.y))
	}
	for l := t.o.layers - 1; l >= 0; l-- {
		in, g, wl := t.acts[l], t.gradOf[l], t.weights(l)
		clear(g)
		for b := range batch {
			drow := d[b*w : (b+1)*w]
			for i, v := range in[b*w : (b+1)*w] {
				grow := g[i*w : (i+1)*w]
				for j, dj := range drow {
					grow[j] += v * dj
				}
			}
		}
		if l > 0 { // the delta below, through tanh
			next := t.delta[(t.o.layers-l)%2]
			for b := range batch {
				drow := d[b*w : (b+1)*w]
				for i := range w {
					s := float32(0)
					for j, dj := range drow {
						s += wl[i*w+j] * dj
					}
					a := in[b*w+i]
					next[b*w+i] = s * (1 - a*a)
				}
			}
			d = next
		}
		done(l)
	}
}

// train runs o.steps steps and returns the median step and the median of
// its computation. Overlapped, a bucket's all-reduce is issued as soon as
// backward has made its last layer's gradient; else all of them once
// backward is over.
func (t *trainer) train(ctx context.Context, overlapped bool) (timing, error) {
	var steps, computes []time.Duration
	works := make([]*gocomms.Work, 0, len(t.bucket))
	var issuing time.Duration // in the calls that issue, which count as no computation
	issue := func(k int) {
		at := time.Now()
		works = append(works, t.c.AllReduceAsync(gocomms.FromSlice(t.bucket[k]), gocomms.Avg))
		issuing += time.Since(at)
	}
	for range t.o.steps {
		// The ranks start each step together, so that a step's time is
		// its own, not the wait for a slower rank's last one.
		if err := t.c.Barrier(ctx); err != nil {
			return timing{}, err
		}
		start := time.Now()
		works, issuing = works[:0], 0
		t.forward()
		t.backward(func(l int) {
			// The bucket is full once its last layer, counting from the
			// top, has its gradient.
			if overlapped && (l == 0 || (t.o.layers-l)%t.o.bucketLayers == 0) {
				issue((t.o.layers - 1 - l) / t.o.bucketLayers)
			}
		})
		compute := time.Since(start) - issuing
		if !overlapped {
			for k := range t.bucket {
				issue(k)
			}
		}
		for _, w := range works {
			if err := w.Wait(ctx); err != nil {
				return timing{}, err
			}
		}
		for l := range t.o.layers {
			wl, g := t.weights(l), t.gradOf[l]
			for i := range wl {
				wl[i] -= learningRate * g[i]
			}
		}
		steps = append(steps, time.Since(start))
		computes = append(computes, compute)
	}
	return timing{step: median(steps), compute: median(computes)}, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
