package gocomms

import (
	"fmt"
	"slices"

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
		// Name the tensor only once it fails: naming each would allocate.
		if c.checkTensor(what, t) != nil {
			return c.checkTensor(fmt.Sprintf("%s[%d]", what, i), t)
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

// checkLike checks t, named what, and that it has dt, the dtype of the
// collective's tensor named like.
func (c *Comm) checkLike(what string, t *Tensor, like string, dt DType) error {
	if err := c.checkTensor(what, t); err != nil {
		return err
	}
	if t.DType() != dt {
		return commerr.Invalid("%s is %v, %s is %v", what, t.DType(), like, dt)
	}
	return nil
}

func numels(ts []*Tensor) []int { return numelsInto(nil, ts) }

// numelsInto returns the element count of each tensor, in dst's storage if
// it has room.
func numelsInto(dst []int, ts []*Tensor) []int {
	dst = resize(dst, len(ts))
	for i, t := range ts {
		dst[i] = t.Numel()
	}
	return dst
}

// cut points ptrs at views of t's consecutive blocks of counts elements
// each, made in views: all three have one entry per block.
func cut(views []Tensor, ptrs []*Tensor, t *Tensor, counts []int) error {
	off := 0
	for i, n := range counts {
		if err := t.NarrowInto(&views[i], off, n); err != nil {
			return commerr.Invalid("%v", err)
		}
		ptrs[i] = &views[i]
		off += n
	}
	return nil
}

// repeatInto returns times copies of n, in dst's storage if it has room.
func repeatInto(dst []int, n, times int) []int {
	dst = resize(dst, times)
	for i := range dst {
		dst[i] = n
	}
	return dst
}

// resize returns s with length n, in its own storage if it has room, for
// the caller to fill.
func resize[T any](s []T, n int) []T {
	return slices.Grow(s[:0], n)[:n]
}
