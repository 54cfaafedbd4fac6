package bench

import (
	"fmt"
	"strings"

	"github.com/gocomms/gocomms/algorithms"
)

// Op is a collective the bench can time.
type Op uint8

// The collectives, in the order `--op all` runs them.
const (
	AllReduce Op = iota + 1
	Reduce
	Broadcast
	AllGather
	ReduceScatter
	AllToAll
	Gather
	Scatter
	Barrier
	SendRecv // every rank sends to rank+1 and receives from rank-1
)

var opInfo = [...]struct {
	name    string
	kind    algorithms.Kind // 0: no schedule to pick an algorithm for
	reduces bool
	rooted  bool
}{
	AllReduce:     {"all_reduce", algorithms.AllReduce, true, false},
	Reduce:        {"reduce", algorithms.Reduce, true, true},
	Broadcast:     {"broadcast", algorithms.Broadcast, false, true},
	AllGather:     {"all_gather", algorithms.AllGather, false, false},
	ReduceScatter: {"reduce_scatter", algorithms.ReduceScatter, true, false},
	AllToAll:      {"all_to_all", algorithms.AllToAll, false, false},
	Gather:        {"gather", algorithms.Gather, false, true},
	Scatter:       {"scatter", algorithms.Scatter, false, true},
	Barrier:       {"barrier", algorithms.Barrier, false, false},
	SendRecv:      {"send_recv", 0, false, false},
}

func (o Op) valid() bool { return o >= AllReduce && o <= SendRecv }

func (o Op) String() string {
	if !o.valid() {
		return fmt.Sprintf("op(%d)", uint8(o))
	}
	return opInfo[o].name
}

// MarshalText writes the op's name, for the JSON lines.
func (o Op) MarshalText() ([]byte, error) {
	if !o.valid() {
		return nil, fmt.Errorf("bench: invalid op %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// Reduces reports whether the op combines contributions with a reduction.
func (o Op) Reduces() bool { return o.valid() && opInfo[o].reduces }

// Kind is the collective's schedule kind, and false for an op no schedule
// runs.
func (o Op) Kind() (algorithms.Kind, bool) {
	if !o.valid() || opInfo[o].kind == 0 {
		return 0, false
	}
	return opInfo[o].kind, true
}

// Rooted reports whether the op has a root rank.
func (o Op) Rooted() bool { return o.valid() && opInfo[o].rooted }

// Algorithms returns the names --algo may give for o, default first.
func (o Op) Algorithms() []string {
	if !o.valid() || opInfo[o].kind == 0 {
		return nil
	}
	return algorithms.NewRegistry().Algorithms(opInfo[o].kind)
}

// ParseOps parses --op: one op name, or "all" for every op in order. Names
// match with or without their separators: all_reduce, all-reduce and
// allreduce are one op.
func ParseOps(s string) ([]Op, error) {
	if s == "all" {
		ops := make([]Op, 0, SendRecv)
		for o := AllReduce; o <= SendRecv; o++ {
			ops = append(ops, o)
		}
		return ops, nil
	}
	names := make([]string, 0, SendRecv)
	for o := AllReduce; o <= SendRecv; o++ {
		if bare(opInfo[o].name) == bare(s) {
			return []Op{o}, nil
		}
		names = append(names, opInfo[o].name)
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
	switch o {
	case Barrier:
		return 0, 0, 0
	case AllGather, Gather:
		param = count / p
		return param, param * p, param
	case ReduceScatter, Scatter:
		param = count / p
		return param * p, param, param
	case AllToAll:
		param = count / p
		return param * p, param * p, param
	}
	return count, count, count
}

// BusFactor is busbw/algbw on p ranks, as nccl-tests defines it: the share
// of the data that must cross the busiest link of an optimal algorithm, so
// that busbw compares with the hardware's peak whatever the op and p.
func (o Op) BusFactor(p int) float64 {
	switch o {
	case AllReduce:
		return 2 * float64(p-1) / float64(p)
	case AllGather, ReduceScatter, AllToAll, Gather, Scatter:
		return float64(p-1) / float64(p)
	case Barrier:
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
