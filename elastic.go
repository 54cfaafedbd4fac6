package gocomms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/quorum"
)

// ElasticConfig says where an Elastic finds the members of its rounds and
// how often it looks for processes waiting to grow in.
type ElasticConfig struct {
	// Quorum is where membership rounds live: the job's store and name,
	// the fewest members a round goes on with, and how long a round waits
	// for more (see package quorum).
	Quorum quorum.Config
	// Expect is how many members this process expects in its first round:
	// the job's size when it starts, so that the round closes as soon as
	// all are there; 0 for a process that replaces a failed one and waits
	// for the members to take it in.
	Expect int
	// GrowEvery is how often rank 0 asks the store whether processes wait
	// to grow in (one store call); zero means a second.
	GrowEvery time.Duration
}

// Elastic is a communicator that outlives its members, for fault-tolerant
// data parallelism (torchft's FT-HSDP and DiLoCo): AllReduce completes
// among the ranks alive, reports which contributed, and shrinks past the
// ones that failed; processes that start later, replacements included,
// grow in at the end of a step; Heal gives them the state the others
// hold. Every member must make the same calls in the same order, as on a
// communicator. It is not safe for concurrent use.
type Elastic struct {
	cfg  ElasticConfig
	opts []Option
	seed *Comm // the communicator JoinElastic created to reconfigure
	comm *Comm
	// holders are the ranks of comm that hold the state, while others
	// that grew in wait for Heal to get it; nil when every rank holds it.
	holders []int
	looked  time.Time

	retired sync.WaitGroup // communicators left behind, finalizing
}

// Flags of the agreement that ends every elastic step.
const (
	stepDone    = 1 << 0 // the all-reduce completed on this rank
	noneWaiting = 1 << 1 // this rank saw no process waiting to grow in
)

// JoinElastic starts this process's part in an elastic communicator
// named name: it joins the next round in the store and returns once the
// round's members have formed a communicator. opts configure every
// communicator it forms (not their rank or size, which the rounds decide).
func JoinElastic(ctx context.Context, backend string, device Device, name string, cfg ElasticConfig, opts ...Option) (*Elastic, error) {
	if cfg.Expect < 0 || cfg.GrowEvery < 0 {
		return nil, fmt.Errorf("gocomms: join elastic %q: %w", name, commerr.Invalid("expect %d and grow-every %v must not be negative", cfg.Expect, cfg.GrowEvery))
	}
	if cfg.GrowEvery == 0 {
		cfg.GrowEvery = time.Second
	}
	seed, err := NewComm(ctx, backend, device, name, append(slices.Clone(opts), WithReconfigure())...)
	if err != nil {
		return nil, err
	}
	e := &Elastic{cfg: cfg, opts: opts, seed: seed}
	if err := e.regrow(ctx, seed, cfg.Expect); err != nil {
		seed.Finalize(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("gocomms: join elastic %q: %w", name, err)
	}
	return e, nil
}

// Comm returns the communicator of the members now; it changes when ranks
// fail or grow in.
func (e *Elastic) Comm() *Comm { return e.comm }

// regrow joins the next round from c, expecting expect members, and moves
// to the communicator of its members once every one is there. One that
// died as it formed is agreed on and shrunk past, as in a step.
func (e *Elastic) regrow(ctx context.Context, c *Comm, expect int) error {
	h, err := c.InitHandle()
	if err != nil {
		return err
	}
	r, err := quorum.Join(ctx, e.cfg.Quorum, h, expect)
	if err != nil {
		return err
	}
	next, err := c.form(ctx, r.ID, AnyOrder(r.Members...), e.opts)
	if err != nil {
		return err
	}
	e.move(next)
	// Newcomers need the state the quorum holds; a first round of
	// newcomers only has none to get.
	if q := next.Quorum(); len(q) > 0 && len(q) < next.Size() {
		e.holders = q
	}
	_, failed, err := next.Agree(ctx, 0)
	if err != nil {
		return err
	}
	return e.shrink(ctx, failed)
}

// shrink moves past the failed ranks of the current communicator, which
// every member agreed on; the state's holders keep theirs.
func (e *Elastic) shrink(ctx context.Context, failed []int) error {
	if len(failed) == 0 {
		return nil
	}
	s, err := e.comm.shrinkTo(ctx, failed, e.opts)
	if err != nil {
		return err
	}
	held := e.holders != nil
	var left []int
	for _, r := range e.holders {
		if !slices.Contains(failed, r) {
			left = append(left, r-countBelow(failed, r))
		}
	}
	e.holders = left
	if len(left) == s.Size() {
		e.holders = nil
	}
	old := e.comm
	e.move(s)
	if held && len(left) == 0 {
		return old.opError(&Op{Name: OpShrink}, fmt.Errorf("%w: every rank that held the state failed (ranks %v)", ErrPeerFailed, failed))
	}
	return nil
}

// countBelow counts the ranks below r.
func countBelow(ranks []int, r int) int {
	n := 0
	for _, x := range ranks {
		if x < r {
			n++
		}
	}
	return n
}

// move retires the current communicator, finalizing it in the
// background: a broken one may wait out its peers' silence. What failed
// there, the callers heard of already.
func (e *Elastic) move(next *Comm) {
	if old := e.comm; old != nil {
		e.retired.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			old.Finalize(ctx)
		})
	}
	e.comm = next
}

// Heal broadcasts state from the quorum to the ranks that grew in, if any
// did since the last call: every member calls it at the start of a step
// with the same tensors. It does nothing otherwise. If a rank fails while
// it runs, the others agree on it, shrink past it and heal again, from
// another holder if need be.
func (e *Elastic) Heal(ctx context.Context, state ...*Tensor) error {
	for e.holders != nil {
		var err error
		for _, t := range state {
			if err = e.comm.Broadcast(ctx, t, e.holders[0]); err != nil {
				break
			}
		}
		agreed, failed, err := e.conclude(ctx, e.comm, OpBroadcast, err, 0)
		if err != nil {
			return err
		}
		if agreed&stepDone != 0 {
			e.holders = nil // every member holds the state
		}
		if err := e.shrink(ctx, failed); err != nil {
			return err
		}
	}
	return nil
}

// conclude ends a step every member of c ran, stepErr being how it went
// here: the members agree on whether it completed on all of them
// (stepDone), on flags, and on the ranks that failed. A step that failed
// with no rank failed is an error, here from stepErr, elsewhere the
// other rank's, as there is none to shrink past and try again without.
func (e *Elastic) conclude(ctx context.Context, c *Comm, op OpName, stepErr error, flags uint64) (uint64, []int, error) {
	if stepErr == nil {
		flags |= stepDone
	}
	agreed, failed, err := c.Agree(ctx, flags)
	if err != nil {
		return 0, nil, err
	}
	if agreed&stepDone == 0 && len(failed) == 0 {
		if stepErr == nil {
			stepErr = c.opError(&Op{Name: op}, fmt.Errorf("the %s failed on another rank", op))
		}
		return 0, nil, stepErr
	}
	return agreed, failed, nil
}

// AllReduce reduces t across the live members, and returns the ranks that
// contributed, as ranks of Comm() when it was called: the same on every
// member that returns. If a member fails, the others agree on it, shrink
// past it and reduce their inputs again; if processes wait to grow in,
// the members take them in before returning (if that fails, the
// contributors come back with the error, the reduction being done). A
// member the others found failed gets an error, and should leave and
// join again as a newcomer.
func (e *Elastic) AllReduce(ctx context.Context, t *Tensor, op ReduceOp, opts ...CallOption) ([]int, error) {
	if t == nil {
		return nil, e.comm.opError(&Op{Name: OpAllReduce}, commerr.Invalid("nil tensor"))
	}
	input := slices.Clone(t.Bytes())
	c := e.comm
	at := identity(c.Size()) // the rank in the caller's communicator of each rank of c
	for {
		reduced := c.AllReduce(ctx, t, op, opts...)
		var flags uint64
		if !e.newcomersWait(ctx, c) {
			flags |= noneWaiting
		}
		agreed, failed, err := e.conclude(ctx, c, OpAllReduce, reduced, flags)
		if err != nil {
			copy(t.Bytes(), input)
			return nil, err
		}
		if agreed&stepDone != 0 {
			// Every member holds the reduction of every rank of c, even
			// one that failed after its part was in.
			if err := e.regroup(ctx, failed, agreed&noneWaiting == 0); err != nil {
				return at, err
			}
			return at, nil
		}
		// Reduce again among the survivors, from the inputs.
		copy(t.Bytes(), input)
		if err := e.shrink(ctx, failed); err != nil {
			return nil, err
		}
		var left []int
		for i, r := range at {
			if !slices.Contains(failed, i) {
				left = append(left, r)
			}
		}
		at = left
		c = e.comm
	}
}

// regroup shrinks c past the failed ranks and grows it by the processes
// waiting, as every member agreed.
func (e *Elastic) regroup(ctx context.Context, failed []int, grow bool) error {
	if err := e.shrink(ctx, failed); err != nil {
		return err
	}
	if grow {
		return e.regrow(ctx, e.comm, e.comm.Size())
	}
	return nil
}

// newcomersWait is whether rank 0 of c, looking at most every GrowEvery,
// finds processes waiting in the store to grow in.
func (e *Elastic) newcomersWait(ctx context.Context, c *Comm) bool {
	if c.Rank() != 0 || time.Since(e.looked) < e.cfg.GrowEvery {
		return false
	}
	e.looked = time.Now()
	n, err := quorum.Waiting(ctx, e.cfg.Quorum)
	if err != nil {
		c.cfg.Logger.Warn("elastic: cannot tell whether processes wait to grow in", "err", err)
		return false
	}
	return n > 0
}

// Finalize finalizes the current communicator, as Comm.Finalize, and
// waits for those left behind.
func (e *Elastic) Finalize(ctx context.Context) error {
	err := e.comm.Finalize(ctx)
	e.retired.Wait()
	return errors.Join(err, e.seed.Finalize(ctx))
}
