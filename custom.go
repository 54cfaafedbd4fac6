package gocomms

import (
	"context"
	"fmt"

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
// collective's parts before they run; here each rank's part is checked
// against its own tensors before anything moves.
func (c *Comm) Custom(ctx context.Context, sched *algorithms.Schedule, inputs, outputs []*Tensor, op ReduceOp, opts ...CallOption) error {
	o, err := c.custom(sched, inputs, outputs, op)
	return c.run(ctx, o, err, opts)
}

// CustomAsync is the async form of Custom.
func (c *Comm) CustomAsync(sched *algorithms.Schedule, inputs, outputs []*Tensor, op ReduceOp, opts ...CallOption) *Work {
	o, err := c.custom(sched, inputs, outputs, op)
	return c.start(o, err, opts)
}

func (c *Comm) custom(sched *algorithms.Schedule, inputs, outputs []*Tensor, op ReduceOp) (*Op, error) {
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
	blocks := [...][]*Tensor{algorithms.Input: inputs, algorithms.Output: outputs}
	for i, st := range sched.Steps {
		if err := checkStep(st, blocks, sched.Scratch); err != nil {
			return o, commerr.Invalid("schedule %q step %d (%v): %v", sched.Algorithm, i, st, err)
		}
		if st.Prim == algorithms.RecvReduce || st.Prim == algorithms.Accumulate {
			if err := checkReduce(op, o.DType); err != nil {
				return o, err
			}
		}
	}
	return o, nil
}

// checkStep checks that a step's regions lie in the buffers they name and
// that it writes no input.
func checkStep(st algorithms.Step, blocks [2][]*Tensor, scratch []int) error {
	inBounds := func(r algorithms.Region) error {
		var size int
		switch {
		case r.Buf == algorithms.Scratch && r.Block >= 0 && r.Block < len(scratch):
			size = scratch[r.Block]
		case r.Buf != algorithms.Scratch && r.Block >= 0 && r.Block < len(blocks[r.Buf]):
			size = blocks[r.Buf][r.Block].Numel()
		default:
			return fmt.Errorf("%v block %d does not exist", r.Buf, r.Block)
		}
		if r.Off < 0 || r.Len < 0 || r.End() > size {
			return fmt.Errorf("region %v lies outside its block of %d elements", r, size)
		}
		return nil
	}
	if src, ok := st.Reads(); ok {
		if err := inBounds(src); err != nil {
			return err
		}
	}
	if dst, ok := st.Writes(); ok {
		if dst.Buf == algorithms.Input {
			return fmt.Errorf("it writes an input")
		}
		return inBounds(dst)
	}
	return nil
}
