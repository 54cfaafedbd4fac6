package gocomms

import (
	"context"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
)

// OpCustom names the operations that run a caller's own schedule.
const OpCustom OpName = "custom"

// Custom runs a collective of the caller's own: sched is this rank's part
// of it, built with an algorithms.Builder (or by a Generator), whose Input
// blocks are inputs and Output blocks outputs, in order, all of one dtype;
// its reductions apply op, which may be the zero ReduceOp where it reduces
// nothing. Every rank calls Custom with its part of the same collective,
// in the same order among its other operations. algorithms.Check proves a
// whole collective that a Generator builds; here each rank's part is
// checked before anything moves: against its own tensors, and, unless
// the Checked option says it was proved already, by algorithms.CheckPart
// (well-formed dependencies, tags and peers, and no two steps racing on
// an element). A part that fails is refused with ErrInvalidArgument and
// the reason.
func (c *Comm) Custom(ctx context.Context, sched *algorithms.Schedule, inputs, outputs []*Tensor, op ReduceOp, opts ...CallOption) error {
	o, err := c.custom(sched, inputs, outputs, op, opts)
	return c.run(ctx, o, err, opts)
}

// CustomAsync is the async form of Custom.
func (c *Comm) CustomAsync(sched *algorithms.Schedule, inputs, outputs []*Tensor, op ReduceOp, opts ...CallOption) *Work {
	o, err := c.custom(sched, inputs, outputs, op, opts)
	return c.start(o, err, opts)
}

func (c *Comm) custom(sched *algorithms.Schedule, inputs, outputs []*Tensor, op ReduceOp, opts []CallOption) (*Op, error) {
	o := &Op{Name: OpCustom, Root: -1, DType: Uint8, Schedule: sched, Inputs: inputs, Outputs: outputs, Reduce: op}
	if sched == nil {
		return o, commerr.Invalid("no schedule")
	}
	if sched.Rank != c.cfg.Rank || sched.Size != c.cfg.Size {
		return o, commerr.Invalid("the schedule is rank %d's of %d, this is rank %d of %d", sched.Rank, sched.Size, c.cfg.Rank, c.cfg.Size)
	}
	if len(inputs) > 0 {
		o.DType = inputs[0].DType()
	} else if len(outputs) > 0 {
		o.DType = outputs[0].DType()
	}
	if err := c.checkTensors("inputs", inputs, -1, o.DType); err != nil {
		return o, err
	}
	if err := c.checkTensors("outputs", outputs, -1, o.DType); err != nil {
		return o, err
	}
	var cl call
	for _, opt := range opts {
		opt(&cl)
	}
	check := sched.Fits
	if !cl.checked {
		check = func(in, out []int) error { return algorithms.CheckPart(sched, in, out) }
	}
	if err := check(numels(inputs), numels(outputs)); err != nil {
		return o, commerr.Invalid("schedule %q: %v", sched.Algorithm, err)
	}
	for _, st := range sched.Steps {
		if st.Prim == algorithms.RecvReduce || st.Prim == algorithms.Accumulate {
			return o, checkReduce(op, o.DType)
		}
	}
	return o, nil
}
