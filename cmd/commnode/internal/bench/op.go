package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gocomms/gocomms/algorithms"
)

// Op is a collective the bench can time: one of algorithms.Kinds, named as
// that Kind is, or SendRecv.
type Op algorithms.Kind

// SendRecv has every rank send to rank+1 and receive from rank-1. No
// schedule runs it: it is Kind 0, as point-to-point is in a gocomms.Op and
// in a simulation.
const SendRecv Op = 0

// Ops lists every op, in the order `--op all` runs them: the kinds, then
// SendRecv.
func Ops() []Op {
	var ops []Op
	for _, k := range algorithms.Kinds() {
		ops = append(ops, Op(k))
	}
	return append(ops, SendRecv)
}

func (o Op) String() string {
	if o == SendRecv {
		return "send_recv"
	}
	return algorithms.Kind(o).String()
}

// MarshalText writes the op's name, for the JSON lines.
func (o Op) MarshalText() ([]byte, error) {
	if !slices.Contains(Ops(), o) {
		return nil, fmt.Errorf("bench: invalid op %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// Kind is the collective's schedule kind, and false for SendRecv.
func (o Op) Kind() (algorithms.Kind, bool) { return algorithms.Kind(o), o != SendRecv }

// Reduces reports whether the op combines contributions with a reduction.
func (o Op) Reduces() bool {
	switch algorithms.Kind(o) {
	case algorithms.AllReduce, algorithms.Reduce, algorithms.ReduceScatter:
		return true
	}
	return false
}

// Rooted reports whether the op has a root rank.
func (o Op) Rooted() bool {
	switch algorithms.Kind(o) {
	case algorithms.Reduce, algorithms.Broadcast, algorithms.Gather, algorithms.Scatter:
		return true
	}
	return false
}

// Algorithms returns the names --algo may give for o, default first.
func (o Op) Algorithms() []string {
	if k, ok := o.Kind(); ok {
		return algorithms.NewRegistry().Algorithms(k) // the built-ins: the bench registers none
	}
	return nil
}

// ParseOps parses --op: one op name, or "all" for every op in order. Names
// match with or without their separators: all_reduce, all-reduce and
// allreduce are one op.
func ParseOps(s string) ([]Op, error) {
	if s == "all" {
		return Ops(), nil
	}
	var names []string
	for _, o := range Ops() {
		if bare(o.String()) == bare(s) {
			return []Op{o}, nil
		}
		names = append(names, o.String())
	}
	return nil, fmt.Errorf("unknown op %q (have %s, all)", s, strings.Join(names, ", "))
}

var separators = strings.NewReplacer("_", "", "-", "")

// bare is an op name without separators, in lower case.
func bare(name string) string { return strings.ToLower(separators.Replace(name)) }

// Counts returns, for a buffer of count elements on p ranks, the elements
// each rank sends and receives and the count column, as nccl-tests'
// getCollByteCount does: ops that split the buffer among ranks round count
// down to a multiple of p, and report one rank's share.
func (o Op) Counts(count, p int) (send, recv, param int) {
	switch algorithms.Kind(o) {
	case algorithms.Barrier:
		return 0, 0, 0
	case algorithms.AllGather, algorithms.Gather:
		param = count / p
		return param, param * p, param
	case algorithms.ReduceScatter, algorithms.Scatter:
		param = count / p
		return param * p, param, param
	case algorithms.AllToAll:
		param = count / p
		return param * p, param * p, param
	}
	return count, count, count
}

// BusFactor is busbw/algbw on p ranks, as nccl-tests defines it: the share
// of the data that must cross the busiest link of an optimal algorithm, so
// that busbw compares with the hardware's peak whatever the op and p.
func (o Op) BusFactor(p int) float64 {
	switch algorithms.Kind(o) {
	case algorithms.AllReduce:
		return 2 * float64(p-1) / float64(p)
	case algorithms.AllGather, algorithms.ReduceScatter, algorithms.AllToAll, algorithms.Gather, algorithms.Scatter:
		return float64(p-1) / float64(p)
	case algorithms.Barrier:
		return 0
	}
	return 1
}

// Specs lays o out for the schedule estimate as a row of the sweep runs
// it: every rank's Spec for n elements per rank as Counts gives it, under
// algorithm algo. Ops without a schedule give nil.
func (o Op) Specs(p, n, elemSize, root int, algo string) []algorithms.Spec {
	kind, ok := o.Kind()
	if !ok {
		return nil
	}
	base := algorithms.Spec{Kind: kind, Size: p, ElemSize: elemSize, Algorithm: algo}
	uniform := func() []int {
		c := make([]int, p)
		for i := range c {
			c[i] = n
		}
		return c
	}
	switch kind {
	case algorithms.AllReduce, algorithms.Reduce, algorithms.Broadcast:
		base.Counts = []int{n}
	case algorithms.AllGather, algorithms.ReduceScatter, algorithms.Gather, algorithms.Scatter:
		base.Counts = uniform()
	case algorithms.AllToAll:
		base.SendCounts, base.RecvCounts = uniform(), uniform()
	}
	if o.Rooted() {
		base.Root = root
	}
	return algorithms.EveryRank(base)
}
