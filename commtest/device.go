package commtest

import (
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
