package commtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// deviceMemory returns the memory of t, a tensor on a GPU, and the
// process's context of its device, through which the reference moves
// bytes to and from it.
func deviceMemory(t *gocomms.Tensor) (*cuda.Context, *cuda.DeviceMemory, int, error) {
	if t.Device().Type != tensor.DeviceCUDA {
		return nil, nil, 0, fmt.Errorf("commtest: tensors on %v are not supported", t.Device())
	}
	ctx, err := cuda.Shared(t.Device().Index)
	if err != nil {
		return nil, nil, 0, err
	}
	mem, off := t.Memory()
	dm, ok := mem.(*cuda.DeviceMemory)
	if !ok {
		return nil, nil, 0, fmt.Errorf("commtest: %v's memory is %T, not a cuda.DeviceMemory", t, mem)
	}
	return ctx, dm, off, nil
}

// upload copies b into t, a tensor on a GPU.
func upload(t *gocomms.Tensor, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	ctx, mem, off, err := deviceMemory(t)
	if err != nil {
		return err
	}
	return ctx.CopyHtoD(mem, off, b)
}

// download copies t, a tensor on a GPU, into b.
func download(b []byte, t *gocomms.Tensor) error {
	if len(b) == 0 {
		return nil
	}
	ctx, mem, off, err := deviceMemory(t)
	if err != nil {
		return err
	}
	return ctx.CopyDtoH(b, mem, off)
}

// AllReduceHost all-reduces t, a tensor in host memory, over c whatever
// c's device: through a tensor there on a GPU communicator, whose
// operations take only its own tensors. Tools use it to combine what
// their ranks found.
func AllReduceHost(ctx context.Context, c *gocomms.Comm, t *gocomms.Tensor, op gocomms.ReduceOp) error {
	if c.Device().IsCPU() {
		return c.AllReduce(ctx, t, op)
	}
	d, err := c.Alloc(t.DType(), t.Numel())
	if err != nil {
		return err
	}
	err = upload(d, t.Bytes())
	if err == nil {
		err = c.AllReduce(ctx, d, op)
	}
	if err == nil {
		err = download(t.Bytes(), d)
	}
	return errors.Join(err, c.Free(d))
}
