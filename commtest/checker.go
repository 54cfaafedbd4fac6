package commtest

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/gocomms/gocomms"
)

// Checker runs one collective at a time on Comm and checks each rank's
// result against the reference. Every rank of Comm must make the same calls
// with the same arguments and Seed. Rooted collectives take root
// Seed mod Comm.Size(), so the seed also picks the root.
type Checker struct {
	Comm *gocomms.Comm
	Seed int // the seed of the next call through a per-collective method
	// Registered takes the cases' tensors from Comm.Alloc, freed after
	// each case: registered memory, which peers of the host read in place.
	Registered bool
}

// A collective is one call the reference knows how to check.
type collective struct {
	name    string
	reduces bool // takes a reduce op
	run     func(ctx context.Context, c *gocomms.Comm, x *call) error
}

// collectives is every collective in the order All runs them.
var collectives = []collective{
	{string(gocomms.OpAllReduce), true, allReduce},
	{string(gocomms.OpReduce), true, reduceToRoot},
	{string(gocomms.OpReduceScatter), true, reduceScatter},
	{string(gocomms.OpReduceScatterSingle), true, reduceScatterSingle},
	{string(gocomms.OpReduceScatterV), true, reduceScatterV},
	{string(gocomms.OpBroadcast), false, broadcast},
	{string(gocomms.OpAllGather), false, allGather},
	{string(gocomms.OpAllGatherSingle), false, allGatherSingle},
	{string(gocomms.OpAllGatherV), false, allGatherV},
	{string(gocomms.OpAllToAll), false, allToAll},
	{string(gocomms.OpAllToAllSingle), false, allToAllSingle},
	{string(gocomms.OpAllToAllV), false, allToAllV},
	{string(gocomms.OpGather), false, gather},
	{string(gocomms.OpGatherSingle), false, gatherSingle},
	{string(gocomms.OpScatter), false, scatter},
	{sendRecvName, false, sendRecv},
	{batchName, false, batch},
}

// The point-to-point cases, named for what they check rather than for one
// operation.
const (
	sendRecvName = "send_recv"
	batchName    = "batch"
)

// appendCases appends the cases All runs for dt and count, seeded seed+1,
// seed+2, ...: every reduction with every valid op, then the rest.
func appendCases(cs []Case, dt gocomms.DType, count, seed int) []Case {
	for _, op := range ValidOps(dt) {
		for _, col := range collectives {
			if col.reduces {
				seed++
				cs = append(cs, Case{Collective: col.name, DType: dt, Op: op, Count: count, Seed: seed})
			}
		}
	}
	for _, col := range collectives {
		if !col.reduces {
			seed++
			cs = append(cs, Case{Collective: col.name, DType: dt, Count: count, Seed: seed})
		}
	}
	return cs
}

// All checks every collective of count elements of dt, the reductions with
// every valid op, advancing Seed before each. It stops at the first wrong
// result or failure.
func (c *Checker) All(ctx context.Context, dt gocomms.DType, count int) error {
	for _, cs := range appendCases(nil, dt, count, c.Seed) {
		c.Seed = cs.Seed
		if err := c.Run(ctx, cs); err != nil {
			return err
		}
	}
	return nil
}

// Run runs one case on c.Comm and checks this rank's result. A wrong result
// is a *Mismatch; an invalid case wraps gocomms.ErrInvalidArgument, and is
// rejected on every rank before anything moves; a failed collective
// returns its error, wrapped with the rank and case.
func (c *Checker) Run(ctx context.Context, cs Case) error {
	x, col, err := c.start(cs)
	if err != nil {
		return err
	}
	err = col.run(ctx, c.Comm, x)
	return cmp.Or(err, x.free())
}

func (c *Checker) start(cs Case) (*call, collective, error) {
	invalid := func(why string) (*call, collective, error) {
		return nil, collective{}, fmt.Errorf("commtest: case %v: %s: %w", cs, why, gocomms.ErrInvalidArgument)
	}
	var col collective
	for _, cl := range collectives {
		if cl.name == cs.Collective {
			col = cl
		}
	}
	switch {
	case col.run == nil:
		return invalid("unknown collective")
	case c.Comm == nil:
		return invalid("the Checker has no Comm")
	case !cs.DType.Valid():
		return invalid("invalid dtype")
	case cs.Count < 0:
		return invalid("negative count")
	case cs.Count > math.MaxInt/8/c.Comm.Size()-4: // no tensor of a case outgrows (Count+4)×size elements of 8 bytes
		return invalid("count too large")
	case !col.reduces && cs.Op != (gocomms.ReduceOp{}):
		return invalid("op given to a collective that does not reduce")
	}
	if col.reduces {
		if err := cs.Op.Supports(cs.DType); err != nil {
			return invalid(err.Error())
		}
	}
	x := &call{Case: cs, rank: c.Comm.Rank(), size: c.Comm.Size()}
	if c.Registered || !c.Comm.Device().IsCPU() {
		x.comm = c.Comm // a GPU communicator's tensors come from Alloc
	}
	return x, col, nil
}

func (c *Checker) reduction(ctx context.Context, name gocomms.OpName, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	return c.Run(ctx, Case{Collective: string(name), DType: dt, Op: op, Count: count, Seed: c.Seed})
}

func (c *Checker) movement(ctx context.Context, name string, dt gocomms.DType, count int) error {
	return c.Run(ctx, Case{Collective: name, DType: dt, Count: count, Seed: c.Seed})
}

// AllReduce checks all-reduce of count elements with op.
func (c *Checker) AllReduce(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	return c.reduction(ctx, gocomms.OpAllReduce, dt, op, count)
}

// Reduce checks reduce of count elements with op to the root, and that the
// other ranks' inputs are left as they were.
func (c *Checker) Reduce(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	return c.reduction(ctx, gocomms.OpReduce, dt, op, count)
}

// ReduceScatter checks reduce-scatter of one count-element tensor per rank.
func (c *Checker) ReduceScatter(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	return c.reduction(ctx, gocomms.OpReduceScatter, dt, op, count)
}

// ReduceScatterSingle checks reduce-scatter of count elements per rank
// packed in one tensor.
func (c *Checker) ReduceScatterSingle(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	return c.reduction(ctx, gocomms.OpReduceScatterSingle, dt, op, count)
}

// ReduceScatterV checks reduce-scatter where rank q's block holds
// count + q%3 elements.
func (c *Checker) ReduceScatterV(ctx context.Context, dt gocomms.DType, op gocomms.ReduceOp, count int) error {
	return c.reduction(ctx, gocomms.OpReduceScatterV, dt, op, count)
}

// Broadcast checks broadcast of count elements from the root.
func (c *Checker) Broadcast(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpBroadcast), dt, count)
}

// AllGather checks all-gather into one count-element tensor per rank.
func (c *Checker) AllGather(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpAllGather), dt, count)
}

// AllGatherSingle checks all-gather of count elements per rank into one
// tensor.
func (c *Checker) AllGatherSingle(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpAllGatherSingle), dt, count)
}

// AllGatherV checks all-gather where rank q contributes count + q%3
// elements.
func (c *Checker) AllGatherV(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpAllGatherV), dt, count)
}

// AllToAll checks all-to-all of one count-element tensor per peer.
func (c *Checker) AllToAll(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpAllToAll), dt, count)
}

// AllToAllSingle checks all-to-all of count elements per peer packed in one
// tensor.
func (c *Checker) AllToAllSingle(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpAllToAllSingle), dt, count)
}

// AllToAllV checks all-to-all with uneven splits of 0 to 2 elements per
// pair, in tensors with spare rows past the splits.
func (c *Checker) AllToAllV(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpAllToAllV), dt, count)
}

// Gather checks gather of count elements per rank to the root.
func (c *Checker) Gather(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpGather), dt, count)
}

// Scatter checks scatter of count elements per rank from the root.
func (c *Checker) Scatter(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, string(gocomms.OpScatter), dt, count)
}

// SendRecv passes count elements around the ring, each rank sending
// asynchronously and receiving blocking, then waiting for its send: a
// large message waits at its sender until the receive is posted
// (docs/OPERATIONS.md), so a ring of blocking sends would wait for ever,
// as it does with MPI or NCCL. On one rank there is nobody to send to,
// and it checks nothing.
func (c *Checker) SendRecv(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, sendRecvName, dt, count)
}

// Batch exchanges count elements with every other rank in one batch, two
// messages per pair with different tags.
func (c *Checker) Batch(ctx context.Context, dt gocomms.DType, count int) error {
	return c.movement(ctx, batchName, dt, count)
}
