package gocomms

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/gocomms/gocomms/commerr"
)

// Split creates a communicator of the ranks listed, collectively over this
// communicator, with torchcomms' semantics: every rank calls it, passing the
// ranks of the group it joins in the order that gives their new ranks; an
// empty list joins no group and returns nil. A list without the caller, with
// duplicates or with ranks out of range is an error on every rank, as is a
// group whose members list it differently. The child gets a fresh timeout
// (TORCHCOMM_TIMEOUT_SECONDS or the default) unless opts set one.
func (c *Comm) Split(ctx context.Context, ranks []int, opts ...Option) (child *Comm, err error) {
	// A pre-hook's rejection goes through the exchange: every rank fails.
	end, bad := c.observe(&Op{Name: OpSplit, Root: -1})
	defer func() { end(err) }()
	if bad == nil {
		bad = c.checkGroup(ranks)
	}
	mine := make([]int64, c.cfg.Size)
	if bad != nil {
		mine[0] = -1
	} else {
		for i, r := range ranks {
			mine[r] = int64(i + 1)
		}
	}
	all, err := c.allGatherInts(ctx, mine)
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, c.opError(&Op{Name: OpSplit}, bad)
	}
	n := c.cfg.Size
	for q := range n {
		if all[q*n] == -1 {
			return nil, c.opError(&Op{Name: OpSplit}, commerr.Invalid("rank %d passed an invalid group, or a hook there rejected the split", q))
		}
	}
	for _, g := range ranks {
		if !slices.Equal(all[g*n:(g+1)*n], mine) {
			return nil, c.opError(&Op{Name: OpSplit}, commerr.Invalid("rank %d lists group %v differently", g, ranks))
		}
	}
	if len(ranks) == 0 {
		ranks = nil
	}
	return c.split(ctx, ranks, opts)
}

// split creates the child communicator of group (nil: none) on every rank
// of this one.
func (c *Comm) split(ctx context.Context, group []int, opts []Option) (*Comm, error) {
	c.mu.Lock()
	name := c.cfg.Name + ".split" + strconv.Itoa(c.splits)
	c.splits++
	c.mu.Unlock()
	return c.splitGroup(ctx, OpSplit, name, group, c.exchange, opts)
}

func (c *Comm) checkGroup(ranks []int) error {
	if len(ranks) == 0 {
		return nil
	}
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		if err := c.checkRank("group rank", r); err != nil {
			return err
		}
		if seen[r] {
			return commerr.Invalid("rank %d appears twice in group %v", r, ranks)
		}
		seen[r] = true
	}
	if !seen[c.cfg.Rank] {
		return commerr.Invalid("group %v does not contain this rank (%d)", ranks, c.cfg.Rank)
	}
	return nil
}

// SplitByColor creates a communicator of the ranks that pass the same
// color, ordered by key and then by rank, with MPI_Comm_split's semantics; a
// negative color joins none and returns nil.
func (c *Comm) SplitByColor(ctx context.Context, color, key int, opts ...Option) (child *Comm, err error) {
	// A pre-hook's rejection goes through the exchange: every rank fails.
	end, bad := c.observe(&Op{Name: OpSplit, Root: -1})
	defer func() { end(err) }()
	rejected := int64(0)
	if bad != nil {
		rejected = 1
	}
	all, err := c.allGatherInts(ctx, []int64{int64(color), int64(key), rejected})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	for q := range c.cfg.Size {
		if all[3*q+2] != 0 {
			return nil, c.opError(&Op{Name: OpSplit}, commerr.Invalid("a hook on rank %d rejected the split", q))
		}
	}
	var group []int
	if color >= 0 {
		for q := range c.cfg.Size {
			if all[3*q] == int64(color) {
				group = append(group, q)
			}
		}
		slices.SortStableFunc(group, func(a, b int) int {
			if ka, kb := all[3*a+1], all[3*b+1]; ka != kb {
				if ka < kb {
					return -1
				}
				return 1
			}
			return a - b
		})
	}
	return c.split(ctx, group, opts)
}

// splitGroup creates the child communicator name of group (nil: none) on
// every rank of this one, the backend rendezvousing through exchange.
func (c *Comm) splitGroup(ctx context.Context, opName OpName, name string, group []int, exchange Exchange, opts []Option) (*Comm, error) {
	var ranks []int
	if group != nil {
		ranks = make([]int, len(group))
		for i, g := range group {
			ranks[i] = c.globalRank(g)
		}
	}
	return c.splitGroupAt(ctx, opName, name, group, ranks, max(slices.Index(group, c.cfg.Rank), 0), exchange, opts)
}

// splitGroupAt is splitGroup given the global rank of each of group's
// ranks and this rank's place in group, which a shrink works out once
// for all the survivors a process runs.
func (c *Comm) splitGroupAt(ctx context.Context, opName OpName, name string, group, ranks []int, me int, exchange Exchange, opts []Option) (*Comm, error) {
	base := []Option{WithRank(me), WithSize(max(len(group), 1)), WithNetwork(c.cfg.Network),
		WithRuntime(runtimeOf(c.cfg)), WithLogger(c.logger), WithFailureDetector(c.cfg.Heartbeat, c.cfg.Silence), WithAlgorithms(c.cfg.Registry), c.metricsOption()}
	if c.checks {
		base = append(base, WithCollectiveChecks())
	}
	o, err := resolve(name, c.cfg.Device, append(base, opts...))
	if err != nil {
		return nil, err
	}
	// Connecting the group waits for peers outside any operation: an abort
	// of this communicator must end that wait too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.abortCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	b, err := c.backend.Split(ctx, group, &o.cfg, exchange)
	if err != nil {
		return nil, c.opError(&Op{Name: opName}, err)
	}
	if group == nil {
		return nil, nil
	}
	return newComm(o, c.backendName, b, false, ranks, c.family), nil
}

// exchange all-gathers one byte string per rank: the lengths first, then
// the strings.
func (c *Comm) exchange(ctx context.Context, mine []byte) ([][]byte, error) {
	lens, err := c.allGatherInts(ctx, []int64{int64(len(mine))})
	if err != nil {
		return nil, err
	}
	for q, n := range lens {
		if err := checkSize(q, n); err != nil {
			return nil, err
		}
	}
	strs, s, st, err := c.gatherStrings(lens, mine)
	if err := c.internal(ctx, &s.Op, err, st); err != nil {
		return nil, err
	}
	return strs, nil
}

// exchangeAsync is exchange without blocking: done is called once, from
// the goroutine that ends the second gather; ctx's deadline bounds each.
func (c *Comm) exchangeAsync(ctx context.Context, mine []byte, done func([][]byte, error)) {
	lens, s, st, err := c.gatherInts([]int64{int64(len(mine))})
	c.internalAsync(ctx, &s.Op, err, st, func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		strs, s, st, err := c.gatherStrings(lens, mine)
		c.internalAsync(ctx, &s.Op, err, st, func(err error) {
			if err != nil {
				strs = nil
			}
			done(strs, err)
		})
	})
}

// gatherStrings is the all-gather of an exchange's strings, given their
// lengths, and where they land.
func (c *Comm) gatherStrings(lens []int64, mine []byte) ([][]byte, *roomOp, *hostStage, error) {
	st := c.hostStage()
	outs := make([]*Tensor, c.cfg.Size)
	strs := make([][]byte, c.cfg.Size)
	for q, n := range lens {
		strs[q] = make([]byte, n)
		outs[q] = st.of(FromSlice(strs[q]), true)
	}
	s := new(roomOp)
	err := c.allGather(s, OpAllGatherV, outs, st.of(FromSlice(slices.Clone(mine)), false), false)
	return strs, s, st, err
}

// allGatherInts all-gathers the same number of int64s from every rank.
func (c *Comm) allGatherInts(ctx context.Context, mine []int64) ([]int64, error) {
	out, s, st, err := c.gatherInts(mine)
	if err := c.internal(ctx, &s.Op, err, st); err != nil {
		return nil, fmt.Errorf("gocomms: split %q: %w", c.cfg.Name, err)
	}
	return out, nil
}

// gatherInts is the all-gather of the same number of int64s from every
// rank, and where they land.
func (c *Comm) gatherInts(mine []int64) ([]int64, *roomOp, *hostStage, error) {
	st := c.hostStage()
	out := make([]int64, len(mine)*c.cfg.Size)
	s := new(roomOp)
	err := c.allGatherSingle(s, st.of(FromSlice(out), true), st.of(FromSlice(mine), false))
	return out, s, st, err
}

// internal runs an operation the communicator issues for itself: hooks do
// not see it. st, if set, staged its host tensors.
func (c *Comm) internal(ctx context.Context, op *Op, invalid error, st *hostStage) error {
	if st != nil && invalid == nil {
		invalid = st.err
	}
	return st.done(c.run(ctx, op, invalid, internalCall))
}

// internalAsync is internal without blocking: then gets how it ended.
func (c *Comm) internalAsync(ctx context.Context, op *Op, invalid error, st *hostStage, then func(error)) {
	if st != nil && invalid == nil {
		invalid = st.err
	}
	c.issue(ctx, op, invalid, internalCall, nil, false).OnEnd(func(w *Work) { then(st.done(w.Err())) })
}

// internalCall marks an operation the communicator issues for itself.
var internalCall = []CallOption{func(cc *call) { cc.internal = true }}
