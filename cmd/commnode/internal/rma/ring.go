package rma

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/tensor"
)

// RingCounts and RingDTypes are torchcomms' WindowRmaTest's: elements per
// block, and the dtypes, each count with each dtype.
var (
	RingCounts = []int{4, 1024, 1 << 20}
	RingDTypes = []gocomms.DType{gocomms.Float32, gocomms.Int32, gocomms.Int8}
)

// RingIters is how often the ring goes round per case, torchcomms' 10.
const RingIters = 10

// Mismatch is an iteration of a ring in which a rank read a block that
// was not what the previous rank put: the first wrong element, and how
// many were wrong.
type Mismatch struct {
	Rank, From   int // the rank that read, and the rank whose block it was
	DType        gocomms.DType
	Count        int // elements per block
	Iter         int
	Elem         int   // the first wrong element
	Got, Want    int64 // its value, and what rank From put there
	WrongInBlock int
}

func (m Mismatch) String() string {
	more := ""
	if m.WrongInBlock > 1 {
		more = fmt.Sprintf(" (%d of the block's %d elements are wrong)", m.WrongInBlock, m.Count)
	}
	return fmt.Sprintf("rank %d: ring %v × %d, iteration %d: element %d of rank %d's block is %d, want %d%s",
		m.Rank, m.DType, m.Count, m.Iter, m.Elem, m.From, m.Got, m.Want, more)
}

// RingValue is what rank r puts at element i of its block in iteration
// it: below 100, so that every ring dtype holds it exactly, and different
// from one iteration and one rank to the next.
func RingValue(r, it, i int) int64 { return int64((r*131 + it*17 + i) % 100) }

// Ring is torchcomms' WindowRmaTest on c: a window of one block of count
// elements of dt per rank; in each of iters iterations every rank puts
// its block into the next rank's window at its own block, notifies the
// next rank, waits for the previous rank's notification, and reads the
// block the previous rank put through its own window's memory (MapRemote
// of itself); a barrier then keeps the next iteration's puts from
// overwriting a block before it is read. Every rank calls it, with the
// same arguments.
//
// Ring returns the elements read wrong, summed over the ranks, so that
// every rank returns the same count, as Atomics does; it calls mismatch
// for each iteration in which this rank read any. It goes on through wrong
// elements, so that every rank completes the same operations; an error
// means an operation failed, and comes with this rank's count so far.
func Ring(ctx context.Context, c *gocomms.Comm, dt gocomms.DType, count, iters int, mismatch func(Mismatch)) (wrong int64, err error) {
	p, r := c.Size(), c.Rank()
	next, prev := (r+1)%p, (r+p-1)%p
	es := dt.Size()
	win, err := c.NewWindow(ctx, p*count*es)
	if err != nil {
		return 0, err
	}
	own, err := win.MapRemote(r)
	if err != nil {
		return 0, err
	}
	block, err := tensor.FromBytes(dt, own.Bytes()[prev*count*es:(prev+1)*count*es], count)
	if err != nil {
		return 0, err
	}
	src, err := gocomms.NewTensor(dt, count)
	if err != nil {
		return 0, err
	}
	for it := range iters {
		for i := range count {
			src.SetInt64(i, RingValue(r, it, i))
		}
		if err := win.Put(ctx, src, next, r*count); err != nil {
			return wrong, fmt.Errorf("iteration %d: %w", it, err)
		}
		if err := win.Notify(ctx, next); err != nil {
			return wrong, fmt.Errorf("iteration %d: %w", it, err)
		}
		if err := waitNotify(ctx, c, win, prev); err != nil {
			return wrong, fmt.Errorf("iteration %d: %w", it, err)
		}
		m := Mismatch{Rank: r, From: prev, DType: dt, Count: count, Iter: it}
		for i := range count {
			got, want := block.Int64At(i), RingValue(prev, it, i)
			if got == want {
				continue
			}
			if m.WrongInBlock == 0 {
				m.Elem, m.Got, m.Want = i, got, want
			}
			m.WrongInBlock++
		}
		if m.WrongInBlock > 0 {
			wrong += int64(m.WrongInBlock)
			if mismatch != nil {
				mismatch(m)
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return wrong, fmt.Errorf("iteration %d: %w", it, err)
		}
	}
	sum := []int64{wrong}
	if err := c.AllReduce(ctx, gocomms.FromSlice(sum), gocomms.Sum); err != nil {
		return wrong, fmt.Errorf("summing the ranks' wrong elements: %w", err)
	}
	return sum[0], win.Close(ctx)
}

// AtomicCheck is what Atomics found: for each atomic, the ops every rank
// issued in all and the values found wrong.
type AtomicCheck struct {
	Op    Op
	Ops   int
	Wrong int64
}

// Atomics checks the atomics across c's ranks, on two int64 counters in
// rank 0's window, both from 0:
//
//	fetch_and_op      every rank issues adds fetch-and-adds of 1 to the
//	                  first, back to back, then waits for them all
//	compare_and_swap  every rank increments the second adds times, each
//	                  with compare-and-swaps from the value it last saw
//	                  until one succeeds
//
// Each must leave its counter at size × adds, and the values fetched (the
// swaps' that succeeded) must be every count from 0 to size × adds - 1,
// each once: each op saw the others whole. One rank's fetch-and-adds, in
// issue order, must fetch increasing values, since a target applies one
// origin's operations in the order issued. Every rank calls it; every
// rank returns the same checks, and calls problem with what it found
// wrong itself.
func Atomics(ctx context.Context, c *gocomms.Comm, adds int, problem func(string)) ([]AtomicCheck, error) {
	p, r := c.Size(), c.Rank()
	win, err := c.NewWindow(ctx, 16)
	if err != nil {
		return nil, err
	}
	report := func(format string, args ...any) {
		if problem != nil {
			problem(fmt.Sprintf("rank %d: ", r) + fmt.Sprintf(format, args...))
		}
	}
	// wrong[0] counts fetch_and_op's wrong values, wrong[1]
	// compare_and_swap's; summed over ranks at the end.
	wrong := make([]int64, 2)

	fetched, err := fetchAndAdds(ctx, win, adds)
	if err != nil {
		return nil, err
	}
	for i := 1; i < adds; i++ {
		if fetched[i] <= fetched[i-1] {
			wrong[0]++
			report("fetch_and_op %d, issued after %d, fetched %d after %d: not in issue order", i, i-1, fetched[i], fetched[i-1])
		}
	}
	swapped, err := compareAndSwaps(ctx, win, adds)
	if err != nil {
		return nil, err
	}

	// Every rank's values to every rank, then the counters, read by rank
	// 0's actor in its order with what it applied.
	allFetched := gocomms.FromSlice(make([]int64, p*adds))
	if err := c.AllGatherSingle(ctx, allFetched, gocomms.FromSlice(fetched)); err != nil {
		return nil, err
	}
	allSwapped := gocomms.FromSlice(make([]int64, p*adds))
	if err := c.AllGatherSingle(ctx, allSwapped, gocomms.FromSlice(swapped)); err != nil {
		return nil, err
	}
	if r == 0 {
		if err := checkCounters(ctx, win, p*adds, [2]*gocomms.Tensor{allFetched, allSwapped}, wrong, report); err != nil {
			return nil, err
		}
	}
	wrongT := gocomms.FromSlice(wrong)
	if err := c.AllReduce(ctx, wrongT, gocomms.Sum); err != nil {
		return nil, err
	}
	if err := win.Close(ctx); err != nil {
		return nil, err
	}
	return []AtomicCheck{
		{Op: FetchAndOp, Ops: p * adds, Wrong: wrong[0]},
		{Op: CompareAndSwap, Ops: p * adds, Wrong: wrong[1]},
	}, nil
}

// fetchAndAdds issues adds fetch-and-adds of 1 to the first counter, back
// to back, waits for them all, and returns what each fetched, in issue
// order.
func fetchAndAdds(ctx context.Context, win *gocomms.Window, adds int) ([]int64, error) {
	one := gocomms.FromSlice([]int64{1})
	fetched := make([]int64, adds)
	works := make([]*gocomms.Work, adds)
	for i := range adds {
		works[i] = win.FetchAndOpAsync(one, gocomms.FromSlice(fetched[i:i+1]), 0, 0, gocomms.Sum)
	}
	for i, w := range works {
		if err := w.Wait(ctx); err != nil {
			return nil, fmt.Errorf("fetch_and_op %d: %w", i, err)
		}
	}
	return fetched, nil
}

// compareAndSwaps increments the second counter adds times, each with
// compare-and-swaps from the value last seen until one succeeds, and
// returns the values the successful ones swapped out.
func compareAndSwaps(ctx context.Context, win *gocomms.Window, adds int) ([]int64, error) {
	swapped := make([]int64, 0, adds)
	value, compare, result := make([]int64, 1), make([]int64, 1), make([]int64, 1)
	valueT, compareT, resultT := gocomms.FromSlice(value), gocomms.FromSlice(compare), gocomms.FromSlice(result)
	for guess := int64(0); len(swapped) < adds; {
		compare[0], value[0] = guess, guess+1
		if err := win.CompareAndSwap(ctx, valueT, compareT, resultT, 0, 1); err != nil {
			return nil, fmt.Errorf("compare_and_swap: %w", err)
		}
		if result[0] == guess {
			swapped = append(swapped, guess)
			guess++
		} else {
			guess = result[0] // another rank's increment came first
		}
	}
	return swapped, nil
}

// checkCounters reads rank 0's counters and checks that each atomic's is
// ops, and that the values all ranks fetched with it are every count
// below ops, each once; it counts what is wrong in wrong, by atomic, and
// reports it.
func checkCounters(ctx context.Context, win *gocomms.Window, ops int, all [2]*gocomms.Tensor, wrong []int64, report func(string, ...any)) error {
	counters := gocomms.FromSlice(make([]int64, 2))
	if err := win.Get(ctx, counters, 0, 0); err != nil {
		return err
	}
	cs, _ := gocomms.As[int64](counters)
	for k, name := range []Op{FetchAndOp, CompareAndSwap} {
		if cs[k] != int64(ops) {
			wrong[k]++
			report("%v: the counter is %d, want %d", name, cs[k], ops)
		}
		vs, _ := gocomms.As[int64](all[k])
		vs = slices.Clone(vs)
		slices.Sort(vs)
		for i, v := range vs {
			if v != int64(i) {
				wrong[k]++
				report("%v: the values fetched, sorted, hold %d at position %d: a count fetched twice or never", name, v, i)
				break
			}
		}
	}
	return nil
}
