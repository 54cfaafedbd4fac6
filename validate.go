package gocomms

import (
	"fmt"

	"github.com/gocomms/gocomms/commerr"
)

// Validation runs before anything moves; every failure wraps
// ErrInvalidArgument and says which argument is wrong.

func (c *Comm) checkTensor(what string, t *Tensor) error {
	if t == nil {
		return commerr.Invalid("%s is nil", what)
	}
	if !t.DType().Valid() {
		return commerr.Invalid("%s has invalid dtype %v", what, t.DType())
	}
	if t.Device() != c.cfg.Device {
		return commerr.Invalid("%s is on %v, the communicator on %v", what, t.Device(), c.cfg.Device)
	}
	return nil
}

// checkTensors checks a list of tensors of one dtype; n < 0 skips the
// length check.
func (c *Comm) checkTensors(what string, ts []*Tensor, n int, dt DType) error {
	if n >= 0 && len(ts) != n {
		return commerr.Invalid("%s has %d tensors, want %d (one per rank)", what, len(ts), n)
	}
	for i, t := range ts {
		if err := c.checkTensor(fmt.Sprintf("%s[%d]", what, i), t); err != nil {
			return err
		}
		if t.DType() != dt {
			return commerr.Invalid("%s[%d] is %v, want %v", what, i, t.DType(), dt)
		}
	}
	return nil
}

func (c *Comm) checkRank(what string, r int) error {
	if r < 0 || r >= c.cfg.Size {
		return commerr.Invalid("%s %d out of range [0,%d)", what, r, c.cfg.Size)
	}
	return nil
}

func checkReduce(op ReduceOp, dt DType) error {
	if !op.Valid() {
		return commerr.Invalid("invalid reduce op %v", op)
	}
	if err := op.Supports(dt); err != nil {
		return commerr.Invalid("%v", err)
	}
	return nil
}

func checkSameDType(what string, t *Tensor, dt DType) error {
	if t.DType() != dt {
		return commerr.Invalid("%s is %v, input is %v", what, t.DType(), dt)
	}
	return nil
}

// numels returns the element count of each tensor.
func numels(ts []*Tensor) []int {
	n := make([]int, len(ts))
	for i, t := range ts {
		n[i] = t.Numel()
	}
	return n
}

// blocks splits t into consecutive views of counts elements each.
func blocks(t *Tensor, counts []int) ([]*Tensor, error) {
	out := make([]*Tensor, len(counts))
	off := 0
	for i, n := range counts {
		b, err := t.Narrow(off, n)
		if err != nil {
			return nil, commerr.Invalid("%v", err)
		}
		out[i] = b
		off += n
	}
	return out, nil
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}
