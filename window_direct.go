package gocomms

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
)

// A window's puts, gets and atomics to a rank whose memory this process
// maps (backend.Window's Direct) are done here, by the calling goroutine,
// with no actor on either side: the peer's CPU takes no part. The
// atomics are hardware ones, atomic with respect to the target's own
// (reduce.FetchAndOpWord); a direct put is not atomic with respect to an
// accumulate, as MPI's puts are not.

// settle completes remotely what this rank issued to rank through its
// actor, before a direct operation, so that operations from one rank to
// another still apply in issue order: a Flush, which costs nothing if
// nothing went through the actor since the last.
func (w *Window) settle(rank int, opts []CallOption) error {
	return w.Flush(context.Background(), rank, opts...)
}

// putInto copies src into mem, rank's window, at offset: a direct put,
// complete when it returns.
func (w *Window) putInto(src *Tensor, rank, offset int, mem []byte, opts []CallOption) error {
	o, err := w.region(backend.WindowPut, "src", src, rank, offset)
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		copy(mem[o.Offset:o.Offset+o.Len], src.Bytes())
	}
	return err
}

// getFrom copies mem, rank's window, at offset into dst: a direct get.
func (w *Window) getFrom(dst *Tensor, rank, offset int, mem []byte, opts []CallOption) error {
	o, err := w.region(backend.WindowGet, "dst", dst, rank, offset)
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		copy(dst.Bytes(), mem[o.Offset:o.Offset+o.Len])
	}
	return err
}

// fetchAt is a direct fetch-and-op on mem, rank's window.
func (w *Window) fetchAt(operand, result *Tensor, rank, offset int, op ReduceOp, mem []byte, opts []CallOption) error {
	err := w.checkAccumulate(backend.WindowFetchAndOp, operand, result, op)
	var o *backend.WindowOp
	if err == nil {
		o, err = w.region(backend.WindowFetchAndOp, "operand", operand, rank, offset)
	}
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		old := reduce.FetchAndOpWord(mem[o.Offset:o.Offset+8], op.Kind(), operand.DType(), operand.Bytes())
		binary.NativeEndian.PutUint64(result.Bytes(), old)
	}
	return err
}

// swapAt is a direct compare-and-swap on mem, rank's window.
func (w *Window) swapAt(value, compare, result *Tensor, rank, offset int, mem []byte, opts []CallOption) error {
	err := checkSwap(value, compare, result)
	var o *backend.WindowOp
	if err == nil {
		o, err = w.region(backend.WindowCompareAndSwap, "value", value, rank, offset)
	}
	if err == nil {
		err = w.usableDirect(rank, opts)
	}
	if err == nil {
		old := reduce.CompareAndSwapWord(mem[o.Offset:o.Offset+8], value.Bytes(), compare.Bytes())
		binary.NativeEndian.PutUint64(result.Bytes(), old)
	}
	return err
}

// usableDirect reports why a direct operation on rank cannot go now: the
// window is closed or revoked, or what came before it through the actor
// did not complete.
func (w *Window) usableDirect(rank int, opts []CallOption) error {
	if err := w.unusable(); err != nil {
		return err
	}
	if err := w.b.Revoked(); err != nil {
		return err
	}
	if err := w.settle(rank, opts); err != nil {
		var oe *OpError
		if errors.As(err, &oe) {
			return errors.Unwrap(oe.Err) // the flush's cause, without its "window N:", which the caller adds
		}
		return err
	}
	return nil
}
