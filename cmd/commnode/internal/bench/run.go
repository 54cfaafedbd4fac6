package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/tensor"
)

// Run times cfg's sweep on c: for each op and size, Warmup ops, a barrier,
// then Iters ops issued back to back and waited for together, as
// nccl-tests does on a stream. Each rank's time per op is its elapsed time
// over Iters; a row reports the largest over ranks. With Check, one more
// op per size runs on patterned inputs after the timed ones and each rank
// counts the elements it holds that differ from a reference computed
// locally; a row reports the sum over ranks.
//
// Run calls report with each row on every rank (rows are reduced across
// ranks, so all ranks see the same) and returns the wrong elements over all
// rows. Buffers are allocated once, for the largest size; the timed loop
// allocates nothing of its own.
func Run(ctx context.Context, c *gocomms.Comm, cfg Config, report func(Result) error) (wrong int64, err error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := cfg.ValidateRanks(c.Size()); err != nil {
		return 0, err
	}
	b, err := newBench(c, cfg)
	if err != nil {
		return 0, err
	}
	if b.dev != nil {
		defer func() {
			if ferr := b.dev.free(c); err == nil {
				err = ferr
			}
		}()
	}
	sizes := cfg.sizes()
	total := 0
	opSizes := func(o Op) []int64 {
		if o == Op(algorithms.Barrier) {
			return []int64{0} // nothing moves: one row
		}
		return sizes
	}
	for _, o := range cfg.Ops {
		if runs(o, b.ranks) {
			total += len(opSizes(o)) * len(cfg.algorithms(o))
		}
	}
	step := 0
	for _, o := range cfg.Ops {
		if !runs(o, b.ranks) {
			continue
		}
	sweep:
		for _, b.algo = range cfg.algorithms(o) {
			for _, size := range opSizes(o) {
				step++
				if cfg.Progress != nil {
					cfg.Progress(Step{Op: o, Bytes: size, Index: step, Total: total})
				}
				res, err := b.row(ctx, o, size)
				if cfg.Unsupported != nil && errors.Is(err, cfg.Unsupported) {
					if err := report(Result{Op: o, Ranks: b.ranks, Unsupported: err.Error()}); err != nil {
						return wrong, err
					}
					break sweep
				}
				if err != nil {
					return wrong, fmt.Errorf("%v of %d bytes%s: %w", o, size, b.by(), err)
				}
				wrong += res.Wrong
				if err := report(res); err != nil {
					return wrong, err
				}
			}
		}
	}
	return wrong, nil
}

// bench is one rank's state for a sweep.
type bench struct {
	c           *gocomms.Comm
	cfg         Config
	rank, ranks int
	elemSize    int
	send, recv  []byte          // the largest size's buffers, viewed per size
	works       []*gocomms.Work // the Works of one loop
	took        []time.Duration // with Blocking, each op's time in the last loop
	// secs is this rank's mean time per op and, with Blocking, the
	// median of its ops; then the largest of each over the ranks.
	secs   []float64
	wrong  []int64 // this rank's wrong elements, then the sum over ranks
	secsT  *gocomms.Tensor
	wrongT *gocomms.Tensor
	chk    *checker // with Check
	algo   string   // the schedule of the rows being run; "" lets gocomms choose
	dev    *device  // on a GPU: the tensors send and recv shadow
}

// by names the schedule of the rows being run, for an error.
func (b *bench) by() string {
	if b.algo == "" {
		return ""
	}
	return " by " + b.algo
}

func newBench(c *gocomms.Comm, cfg Config) (*bench, error) {
	es := cfg.DType.Size()
	b := &bench{
		c: c, cfg: cfg, rank: c.Rank(), ranks: c.Size(), elemSize: es,
		works: make([]*gocomms.Work, max(cfg.Iters, cfg.Warmup)), took: make([]time.Duration, 0, max(cfg.Iters, cfg.Warmup)),
		secs: make([]float64, 2), wrong: make([]int64, 1),
	}
	b.secsT, b.wrongT = gocomms.FromSlice(b.secs), gocomms.FromSlice(b.wrong)
	if cfg.Check {
		b.chk = newChecker(cfg.DType, cfg.RedOp, b.ranks)
	}
	n := int(cfg.MaxBytes) / es * es
	buffer := func() ([]byte, error) {
		if !cfg.Registered || !c.Device().IsCPU() {
			return make([]byte, n), nil
		}
		t, err := c.Alloc(gocomms.Uint8, n)
		if err != nil {
			return nil, err
		}
		return t.Bytes(), nil
	}
	var err error
	if slices.ContainsFunc(cfg.Ops, func(o Op) bool { return o != Op(algorithms.Barrier) }) {
		if b.send, err = buffer(); err != nil {
			return nil, err
		}
	}
	inPlace := func(o Op) bool {
		switch algorithms.Kind(o) {
		case algorithms.AllReduce, algorithms.Reduce, algorithms.Broadcast, algorithms.Barrier:
			return true
		}
		return false
	}
	if slices.ContainsFunc(cfg.Ops, func(o Op) bool { return !inPlace(o) }) {
		if b.recv, err = buffer(); err != nil {
			return nil, err
		}
	}
	if !c.Device().IsCPU() {
		if b.dev, err = newDevice(c, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// row times and checks o on a buffer of size bytes.
func (b *bench) row(ctx context.Context, o Op, size int64) (Result, error) {
	es, p := b.elemSize, b.ranks
	sendN, recvN, n := o.Counts(int(size)/es, p)
	pl, err := b.plan(o, sendN, recvN, n)
	if err != nil {
		return Result{}, err
	}
	sec, median, err := b.time(ctx, &pl)
	if err != nil {
		return Result{}, err
	}
	var wrong int64
	checked := b.cfg.Check && o != Op(algorithms.Barrier)
	if checked {
		b.chk.pat = newPattern(b.cfg.DType, b.cfg.RedOp, o.Reduces(), p)
		for _, f := range pl.fills {
			b.chk.pat.fill(f.buf, f.src, f.off)
		}
		if err := b.shadow(true); err != nil {
			return Result{}, err
		}
		if err := pl.issue().Wait(ctx); err != nil {
			return Result{}, err
		}
		if err := b.shadow(false); err != nil {
			return Result{}, err
		}
		for _, rg := range pl.checks {
			wrong += b.chk.wrong(rg)
		}
	}
	b.secs[0], b.secs[1], b.wrong[0] = sec, median, wrong
	if err := b.allReduce(ctx, b.secsT, gocomms.Max); err != nil {
		return Result{}, err
	}
	if err := b.allReduce(ctx, b.wrongT, gocomms.Sum); err != nil {
		return Result{}, err
	}
	sec, median, wrong = b.secs[0], b.secs[1], b.wrong[0]

	res := Result{
		Op: o, Ranks: p, Bytes: int64(max(sendN, recvN) * es), Count: int64(n),
		DType: b.cfg.DType.String(), RedOp: "none", Root: -1,
		TimeUS: sec * 1e6, MedianUS: median * 1e6, Checked: checked, Wrong: wrong, Algorithm: b.algo,
	}
	if o == Op(algorithms.Barrier) {
		res.DType = "none"
	}
	if o.Reduces() {
		res.RedOp = redOpName(b.cfg.RedOp)
	}
	if o.Rooted() {
		res.Root = b.cfg.Root
	}
	if sec > 0 {
		res.AlgBW = float64(res.Bytes) / sec / 1e9
		res.BusBW = res.AlgBW * o.BusFactor(p)
	}
	if b.algo != "" && b.cfg.Algorithm == AllAlgorithms && b.cfg.Model.BytesPerSecond > 0 {
		est, err := algorithms.Estimate(o.Specs(p, n, es, b.cfg.Root, b.algo), b.cfg.Model)
		if err != nil {
			return Result{}, fmt.Errorf("estimating %s: %w", b.algo, err)
		}
		res.EstimateUS = est * 1e6
	}
	return res, nil
}

// time runs the warm-ups, then the timed ops, and returns this rank's
// seconds per op: the mean, and with Blocking the median of the ops,
// each timed on its own (loop). The median is what a quiet machine
// gives: one op that waited on the collector or the scheduler moves the
// mean of a hundred by as much as the op takes.
func (b *bench) time(ctx context.Context, pl *plan) (mean, median float64, err error) {
	if err := b.loop(ctx, pl, b.cfg.Warmup); err != nil {
		return 0, 0, err
	}
	// Ranks start the clock together, as nccl-tests' barrier before each
	// size; nothing synchronises them between timed ops.
	if err := b.c.Barrier(ctx); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	err = b.loop(ctx, pl, b.cfg.Iters)
	mean = time.Since(start).Seconds() / float64(b.cfg.Iters)
	if b.cfg.Blocking {
		median = medianOf(b.took).Seconds()
	}
	return mean, median, err
}

// medianOf sorts ds and returns its median: the mean of the middle two
// of an even count.
func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	m := len(ds) / 2
	if len(ds)%2 == 0 {
		return (ds[m-1] + ds[m]) / 2
	}
	return ds[m]
}

// loop issues n ops back to back, then waits for all of them; or, with
// Blocking, waits for each before issuing the next, keeping each one's
// time in b.took. Ops of a communicator run one at a time in issue
// order, so this is nccl-tests' launches on one stream followed by one
// synchronisation.
func (b *bench) loop(ctx context.Context, pl *plan, n int) error {
	if b.cfg.Blocking {
		b.took = b.took[:0]
		for range n {
			start := time.Now()
			if err := pl.call(ctx); err != nil {
				return err
			}
			b.took = append(b.took, time.Since(start))
		}
		return nil
	}
	works := b.works[:n]
	for i := range works {
		// An interruption, or an op that failed already (the communicator
		// broke, and every later op fails too), ends the issuing.
		if ctx.Err() != nil || i > 0 && failed(works[i-1]) {
			works = works[:i]
			break
		}
		works[i] = pl.issue()
	}
	var first error
	for i, w := range works {
		if err := w.Wait(ctx); err != nil && first == nil {
			first = err
		}
		works[i] = nil
		if ctx.Err() != nil {
			// Interrupted: the caller aborts the rest rather than wait on
			// each of them in turn.
			clear(works[i:])
			return context.Cause(ctx)
		}
	}
	return first
}

// failed reports whether w has ended with an error, without waiting.
func failed(w *gocomms.Work) bool {
	select {
	case <-w.Done():
		return w.Err() != nil
	default:
		return false
	}
}

// A plan is one size of one op on this rank.
type plan struct {
	issue  func() *gocomms.Work
	call   func(context.Context) error // the blocking form
	fills  []region                    // inputs, and outputs poisoned, before the checked op
	checks []region                    // what the checked op must leave
}

// plan lays o out on the buffers: sendN elements in, recvN out, n per rank
// where the op splits its buffer among ranks (nccl-tests' paramcount).
func (b *bench) plan(o Op, sendN, recvN, n int) (plan, error) {
	pb := b.planner(sendN, recvN, n)
	var pl plan
	switch k := algorithms.Kind(o); {
	case o == SendRecv:
		pl = pb.sendRecv()
	case k == algorithms.AllReduce || k == algorithms.Reduce || k == algorithms.Broadcast:
		pl = pb.whole(k)
	case k == algorithms.AllGather || k == algorithms.ReduceScatter || k == algorithms.AllToAll:
		pl = pb.single(k)
	case k == algorithms.Gather:
		pl = pb.gather()
	case k == algorithms.Scatter:
		pl = pb.scatter()
	case k == algorithms.Barrier:
		c, opts := pb.c, pb.opts
		pl.issue = func() *gocomms.Work { return c.BarrierAsync(opts...) }
		pl.call = func(ctx context.Context) error { return c.Barrier(ctx, opts...) }
	default:
		return plan{}, fmt.Errorf("invalid op %v", o)
	}
	return pl, pb.v.err
}

// planner is what plan lays an op out with: the buffers' parts in use,
// n elements per rank, and views over them.
type planner struct {
	c                 *gocomms.Comm
	r, p, root, n, es int
	op                gocomms.ReduceOp
	opts              []gocomms.CallOption
	in, out           []byte
	// Outputs start as the pattern of a rank that does not exist, so that
	// an element the op failed to write differs from its reference (unless
	// the patterns agree there by chance, as bool's two values often do).
	poisoned region
	v        views
}

func (b *bench) planner(sendN, recvN, n int) *planner {
	pb := &planner{c: b.c, r: b.rank, p: b.ranks, root: b.cfg.Root, n: n, es: b.elemSize, op: b.cfg.RedOp}
	if b.algo != "" {
		pb.opts = []gocomms.CallOption{gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: b.algo})}
	}
	pb.in = b.send[:sendN*pb.es]
	if b.recv != nil {
		pb.out = b.recv[:recvN*pb.es]
	}
	pb.poisoned = region{pb.out, pb.p, 0}
	pb.v = views{dt: b.cfg.DType, b: b}
	return pb
}

// block returns rank q's block of buf.
func (pb *planner) block(buf []byte, q int) []byte {
	return buf[q*pb.n*pb.es : (q+1)*pb.n*pb.es]
}

// sendRecv plans a send to the next rank and a receive from the previous.
func (pb *planner) sendRecv() plan {
	c, r, p, opts := pb.c, pb.r, pb.p, pb.opts
	prev := (r + p - 1) % p
	batch := c.NewBatch().Send(pb.v.of(pb.in), (r+1)%p).Recv(pb.v.of(pb.out), prev)
	return plan{
		issue:  func() *gocomms.Work { return batch.IssueAsync(opts...) },
		call:   func(ctx context.Context) error { return batch.Issue(ctx, opts...) },
		fills:  []region{{pb.in, r, 0}, pb.poisoned},
		checks: []region{{pb.out, prev, 0}},
	}
}

// whole plans a collective of kind k on one tensor a rank, the input.
func (pb *planner) whole(k algorithms.Kind) plan {
	c, t, r, root, op, opts := pb.c, pb.v.of(pb.in), pb.r, pb.root, pb.op, pb.opts
	pl := plan{fills: []region{{pb.in, r, 0}}}
	switch k {
	case algorithms.AllReduce:
		pl.issue = func() *gocomms.Work { return c.AllReduceAsync(t, op, opts...) }
		pl.call = func(ctx context.Context) error { return c.AllReduce(ctx, t, op, opts...) }
		pl.checks = []region{{pb.in, reduced, 0}}
	case algorithms.Reduce:
		pl.issue = func() *gocomms.Work { return c.ReduceAsync(t, root, op, opts...) }
		pl.call = func(ctx context.Context) error { return c.Reduce(ctx, t, root, op, opts...) }
		want := r // other ranks' tensors are inputs only: unchanged
		if r == root {
			want = reduced
		}
		pl.checks = []region{{pb.in, want, 0}}
	case algorithms.Broadcast:
		pl.issue = func() *gocomms.Work { return c.BroadcastAsync(t, root, opts...) }
		pl.call = func(ctx context.Context) error { return c.Broadcast(ctx, t, root, opts...) }
		pl.checks = []region{{pb.in, root, 0}}
	}
	return pl
}

// single plans a collective of kind k from the input to the output, each
// one tensor.
func (pb *planner) single(k algorithms.Kind) plan {
	c, ti, to, r, n, op, opts := pb.c, pb.v.of(pb.in), pb.v.of(pb.out), pb.r, pb.n, pb.op, pb.opts
	pl := plan{fills: []region{{pb.in, r, 0}, pb.poisoned}}
	switch k {
	case algorithms.AllGather:
		pl.issue = func() *gocomms.Work { return c.AllGatherSingleAsync(to, ti, opts...) }
		pl.call = func(ctx context.Context) error { return c.AllGatherSingle(ctx, to, ti, opts...) }
		for q := range pb.p {
			pl.checks = append(pl.checks, region{pb.block(pb.out, q), q, 0})
		}
	case algorithms.ReduceScatter:
		pl.issue = func() *gocomms.Work { return c.ReduceScatterSingleAsync(to, ti, op, opts...) }
		pl.call = func(ctx context.Context) error { return c.ReduceScatterSingle(ctx, to, ti, op, opts...) }
		pl.checks = []region{{pb.out, reduced, r * n}}
	case algorithms.AllToAll:
		pl.issue = func() *gocomms.Work { return c.AllToAllSingleAsync(to, ti, opts...) }
		pl.call = func(ctx context.Context) error { return c.AllToAllSingle(ctx, to, ti, opts...) }
		for q := range pb.p {
			pl.checks = append(pl.checks, region{pb.block(pb.out, q), q, r * n})
		}
	}
	return pl
}

// gather plans a gather into the root's list of the output's blocks.
func (pb *planner) gather() plan {
	c, ti, root, opts := pb.c, pb.v.of(pb.in), pb.root, pb.opts
	var outs []*gocomms.Tensor // read on root only
	pl := plan{fills: []region{{pb.in, pb.r, 0}}}
	if pb.r == root {
		pl.fills = append(pl.fills, pb.poisoned)
		for q := range pb.p {
			outs = append(outs, pb.v.of(pb.block(pb.out, q)))
			pl.checks = append(pl.checks, region{pb.block(pb.out, q), q, 0})
		}
	}
	pl.issue = func() *gocomms.Work { return c.GatherAsync(outs, ti, root, opts...) }
	pl.call = func(ctx context.Context) error { return c.Gather(ctx, outs, ti, root, opts...) }
	return pl
}

// scatter plans a scatter from the root's list of the input's blocks.
func (pb *planner) scatter() plan {
	c, to, root, opts := pb.c, pb.v.of(pb.out), pb.root, pb.opts
	var ins []*gocomms.Tensor // read on root only
	pl := plan{fills: []region{pb.poisoned}}
	if pb.r == root {
		pl.fills = append(pl.fills, region{pb.in, root, 0})
		for q := range pb.p {
			ins = append(ins, pb.v.of(pb.block(pb.in, q)))
		}
	}
	pl.checks = []region{{pb.out, root, pb.r * pb.n}}
	pl.issue = func() *gocomms.Work { return c.ScatterAsync(to, ins, root, opts...) }
	pl.call = func(ctx context.Context) error { return c.Scatter(ctx, to, ins, root, opts...) }
	return pl
}

// views makes tensors over byte slices of the bench's buffers, or over
// the device memory they shadow, keeping the first error.
type views struct {
	dt  gocomms.DType
	b   *bench
	err error
}

func (v *views) of(sub []byte) *gocomms.Tensor {
	var t *gocomms.Tensor
	var err error
	switch d := v.b.dev; {
	case d == nil:
		t, err = tensor.FromBytes(v.dt, sub)
	case v.b.recv != nil && within(sub, v.b.recv):
		t, err = d.view(v.dt, v.b.recv, d.recv, sub)
	default:
		t, err = d.view(v.dt, v.b.send, d.send, sub)
	}
	if err != nil && v.err == nil {
		v.err = err
	}
	return t
}

// within reports whether sub is a slice of buf.
func within(sub, buf []byte) bool {
	return len(sub) > 0 && len(buf) > 0 &&
		uintptr(unsafe.Pointer(&sub[0])) >= uintptr(unsafe.Pointer(&buf[0])) &&
		uintptr(unsafe.Pointer(&sub[0])) < uintptr(unsafe.Pointer(&buf[0]))+uintptr(len(buf))
}

// shadow copies the host buffers to the device's (up), or back: a GPU
// run's fills and checks are made on the host.
func (b *bench) shadow(up bool) error {
	if b.dev == nil {
		return nil
	}
	if err := b.dev.copy(b.dev.send, b.send, up); err != nil {
		return err
	}
	return b.dev.copy(b.dev.recv, b.recv, up)
}

// allReduce reduces one host scalar across ranks, whatever the
// communicator's device.
func (b *bench) allReduce(ctx context.Context, t *gocomms.Tensor, op gocomms.ReduceOp) error {
	return commtest.AllReduceHost(ctx, b.c, t, op)
}
