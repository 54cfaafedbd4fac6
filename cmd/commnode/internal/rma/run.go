package rma

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/gocomms/gocomms"
)

// Run times cfg's sweep on c, as mpi_rma.c times Open MPI's: all ranks
// create one window; for each op and size, the origin (rank 0) runs the
// warm-ups, all ranks meet in a barrier, and the origin runs the timed ops
// back to back on rank 1's window; the origin's time is shared with every
// rank by an all-reduce (max), and so, with Check, are the wrong bytes or
// values (sum). Ranks other than 0 and 1 take part in the collective
// steps only.
//
// Run calls report with each row on every rank, and returns the wrong
// bytes or values over all rows. The window is closed at the end; after an
// error it is left to the caller, who should abort the communicator: a
// peer may be gone, and Close is collective.
func Run(ctx context.Context, c *gocomms.Comm, cfg Config, report func(Result) error) (wrong int64, err error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := cfg.ValidateRanks(c.Size()); err != nil {
		return 0, err
	}
	win, err := c.NewWindow(ctx, cfg.WindowBytes())
	if err != nil {
		return 0, err
	}
	if cfg.Started != nil {
		if err := cfg.Started(win.Access(TargetRank)); err != nil {
			return 0, err
		}
	}
	b := newBench(c, win, cfg)
	for _, o := range cfg.Ops {
		for _, size := range cfg.Sizes(o) {
			res, err := b.row(ctx, o, size)
			if err != nil {
				return wrong, fmt.Errorf("%v of %d bytes: %w", o, size, err)
			}
			wrong += res.Wrong
			if err := report(res); err != nil {
				return wrong, err
			}
		}
	}
	return wrong, win.Close(ctx)
}

// bench is one rank's state for a sweep.
type bench struct {
	c      *gocomms.Comm
	win    *gocomms.Window
	cfg    Config
	rank   int
	mem    []byte // this rank's window
	src    []byte // the origin's source and destination, the window's size
	dst    []byte
	seq    int // checks so far: each moves another pattern
	one    *gocomms.Tensor
	swap   []int64 // compare_and_swap's value and compare, as tensors below
	cmp    []int64
	swapT  *gocomms.Tensor
	cmpT   *gocomms.Tensor
	res    []int64 // what the atomics fetched, warm-ups first
	word   []int64 // what the last atomic fetched, as fetchT
	fetchT *gocomms.Tensor
	secs   []float64 // the origin's seconds, then the max over ranks
	wrong  []int64   // this rank's wrong count, then the sum over ranks
	secsT  *gocomms.Tensor
	wrongT *gocomms.Tensor
}

func newBench(c *gocomms.Comm, win *gocomms.Window, cfg Config) *bench {
	b := &bench{
		c: c, win: win, cfg: cfg, rank: c.Rank(), mem: win.Tensor().Bytes(),
		one: gocomms.FromSlice([]int64{1}), swap: make([]int64, 1), cmp: make([]int64, 1),
		word: make([]int64, 1), secs: make([]float64, 1), wrong: make([]int64, 1),
	}
	b.fetchT = gocomms.FromSlice(b.word)
	b.swapT, b.cmpT = gocomms.FromSlice(b.swap), gocomms.FromSlice(b.cmp)
	b.secsT, b.wrongT = gocomms.FromSlice(b.secs), gocomms.FromSlice(b.wrong)
	if b.rank == Origin {
		b.src, b.dst = make([]byte, len(b.mem)), make([]byte, len(b.mem))
		fill(b.src, filler)
		if slices.ContainsFunc(cfg.Ops, Op.Atomic) {
			// A word per op, as mpi_rma.c keeps them.
			iters, warmup := cfg.Counts(8)
			b.res = make([]int64, iters+warmup)
		}
	}
	return b
}

// row times o at size bytes and, with Check, checks what it moved.
func (b *bench) row(ctx context.Context, o Op, size int64) (Result, error) {
	iters, warmup := b.cfg.Counts(size)
	if o.Atomic() {
		// The word starts at 0 for every atomic op; the target's actor
		// writes it, in order with what it applies for the origin.
		if b.rank == TargetRank {
			if err := b.win.Put(ctx, gocomms.FromSlice([]int64{0}), TargetRank, 0); err != nil {
				return Result{}, err
			}
		}
		if err := b.c.Barrier(ctx); err != nil {
			return Result{}, err
		}
	}
	var sec float64
	if b.rank == Origin {
		if err := b.ops(ctx, o, size, warmup, 0); err != nil {
			return Result{}, err
		}
	}
	if err := b.c.Barrier(ctx); err != nil {
		return Result{}, err
	}
	if b.rank == Origin {
		start := time.Now()
		if err := b.ops(ctx, o, size, iters, warmup); err != nil {
			return Result{}, err
		}
		sec = time.Since(start).Seconds()
	}
	b.secs[0] = sec
	if err := b.c.AllReduce(ctx, b.secsT, gocomms.Max); err != nil {
		return Result{}, err
	}
	sec = b.secs[0]
	res := Result{Op: o, Ranks: b.c.Size(), Bytes: size, Iters: iters, Checked: b.cfg.Check}
	if sec > 0 {
		res.TimeUS = sec / float64(iters) * 1e6
		res.GBps = float64(size) * float64(iters) / sec / 1e9
	}
	if !b.cfg.Check {
		return res, nil
	}
	var wrong int64
	var err error
	if o.Atomic() {
		wrong, err = b.checkAtomic(ctx, o, warmup+iters)
	} else {
		b.seq++
		wrong, err = b.checkBulk(ctx, o, int(size), iters)
	}
	if err != nil {
		return Result{}, fmt.Errorf("checking: %w", err)
	}
	// An all-reduce, not a reduce: the origin must not put again before
	// the target has read what this check left.
	b.wrong[0] = wrong
	if err := b.c.AllReduce(ctx, b.wrongT, gocomms.Sum); err != nil {
		return Result{}, err
	}
	res.Wrong = b.wrong[0]
	return res, nil
}

// ops issues n ops of o from the origin; done is the count of atomic ops
// on the word so far, whose fetched values go to res[done:].
func (b *bench) ops(ctx context.Context, o Op, size int64, n, done int) error {
	w, t := b.win, TargetRank
	switch o {
	case Put:
		src := gocomms.FromSlice(b.src[:size])
		for range n {
			if err := w.Put(ctx, src, t, 0); err != nil {
				return err
			}
			if err := w.Flush(ctx, t); err != nil {
				return err
			}
		}
	case PutPipelined:
		// Each Put returns once its source may be reused, not once it is
		// applied: the flush completes them all at the target.
		src := gocomms.FromSlice(b.src[:size])
		for range n {
			if err := w.Put(ctx, src, t, 0); err != nil {
				return err
			}
		}
		return w.Flush(ctx, t)
	case Get:
		// A get returns with the bytes: it needs no flush to complete.
		dst := gocomms.FromSlice(b.dst[:size])
		for range n {
			if err := w.Get(ctx, dst, t, 0); err != nil {
				return err
			}
		}
	case FetchAndOp:
		for i := range n {
			if err := w.FetchAndOp(ctx, b.one, b.fetchT, t, 0, gocomms.Sum); err != nil {
				return err
			}
			b.res[done+i] = b.word[0]
		}
	case CompareAndSwap:
		for i := range n {
			b.cmp[0] = int64(done + i)
			b.swap[0] = b.cmp[0] + 1
			if err := w.CompareAndSwap(ctx, b.swapT, b.cmpT, b.fetchT, t, 0); err != nil {
				return err
			}
			b.res[done+i] = b.word[0]
		}
	}
	return nil
}

// filler is the byte the timed loops carry; no pattern byte equals it.
const filler = 0xA5

// pat is byte i of the pattern check seq moves, mpi_rma.c's: it changes
// with both, so that bytes left from an earlier size or op do not pass.
func pat(i, seq int) byte {
	v := byte((i*131 + seq*17 + 1) % 251)
	if v == filler {
		return 0
	}
	return v
}

// fillPattern writes check seq's pattern into b.
func fillPattern(b []byte, seq int) {
	for i := range b {
		b[i] = pat(i, seq)
	}
}

// countWrong is the count of b's bytes that differ from check seq's
// pattern.
func countWrong(b []byte, seq int) int64 {
	var n int64
	for i, v := range b {
		if v != pat(i, seq) {
			n++
		}
	}
	return n
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// checkBulk moves a pattern the way o moves bytes and returns this rank's
// count of bytes that arrived wrong.
//
//	put, put_pipelined  the origin puts the pattern (put_pipelined: in up
//	                    to iters consecutive pieces), flushes and notifies
//	                    the target, which then counts the window's bytes
//	                    that differ from it
//	get                 the target's actor writes the pattern into its
//	                    window; after a barrier the origin gets it and
//	                    counts the bytes that differ
func (b *bench) checkBulk(ctx context.Context, o Op, size, iters int) (int64, error) {
	var wrong int64
	if o == Get {
		if b.rank == TargetRank {
			p := make([]byte, size)
			fillPattern(p, b.seq)
			if err := b.win.Put(ctx, gocomms.FromSlice(p), TargetRank, 0); err != nil {
				return 0, err
			}
		}
		if err := b.c.Barrier(ctx); err != nil {
			return 0, err
		}
		if b.rank == Origin {
			dst := b.dst[:size]
			fill(dst, filler)
			if err := b.win.Get(ctx, gocomms.FromSlice(dst), TargetRank, 0); err != nil {
				return 0, err
			}
			wrong = countWrong(dst, b.seq)
		}
		return wrong, nil
	}
	switch b.rank {
	case Origin:
		src := b.src[:size]
		fillPattern(src, b.seq)
		pieces, off := 1, 0
		if o == PutPipelined {
			pieces = min(iters, size)
		}
		for k := range pieces {
			n := size / pieces
			if k < size%pieces {
				n++
			}
			if err := b.win.Put(ctx, gocomms.FromSlice(src[off:off+n]), TargetRank, off); err != nil {
				return 0, err
			}
			off += n
		}
		if err := b.win.Flush(ctx, TargetRank); err != nil {
			return 0, err
		}
		fill(src, filler)
		if err := b.win.Notify(ctx, TargetRank); err != nil {
			return 0, err
		}
	case TargetRank:
		// The notification follows the puts: once it is in, so are they.
		if err := waitNotify(ctx, b.c, b.win, Origin); err != nil {
			return 0, err
		}
		wrong = countWrong(b.mem[:size], b.seq)
	}
	return wrong, nil
}

// checkAtomic checks the values the origin fetched in the warm-ups and
// the timed loop (total of them), each of which must be the count of ops
// before it, and the word they left at the target, the count of all; for
// compare_and_swap, one more swap whose compare value is wrong must fetch
// the word and leave it as it was. It returns this rank's count of wrong
// values.
func (b *bench) checkAtomic(ctx context.Context, o Op, total int) (int64, error) {
	var wrong int64
	switch b.rank {
	case Origin:
		for i, v := range b.res[:total] {
			if v != int64(i) {
				wrong++
			}
		}
		if o == CompareAndSwap {
			b.cmp[0], b.swap[0] = int64(total)+5, 999
			b.word[0] = -1
			if err := b.win.CompareAndSwap(ctx, b.swapT, b.cmpT, b.fetchT, TargetRank, 0); err != nil {
				return 0, err
			}
			if b.word[0] != int64(total) {
				wrong++
			}
		}
		if err := b.win.Notify(ctx, TargetRank); err != nil {
			return 0, err
		}
	case TargetRank:
		if err := waitNotify(ctx, b.c, b.win, Origin); err != nil {
			return 0, err
		}
		if int64(binary.NativeEndian.Uint64(b.mem[:8])) != int64(total) {
			wrong++
		}
	}
	return wrong, nil
}

// waitNotify waits on win for a notification from rank, for at most c's
// timeout: a wait has no timeout of its own, and the peer it waits on may
// be gone.
func waitNotify(ctx context.Context, c *gocomms.Comm, win *gocomms.Window, rank int) error {
	if d := c.Timeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if err := win.WaitNotify(ctx, rank); err != nil {
		return fmt.Errorf("waiting for rank %d's notification: %w", rank, err)
	}
	return nil
}
