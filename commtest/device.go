package commtest

import (
	"context"
	"errors"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/gpu/cuda"
)

// upload copies b into t, a tensor on a GPU.
func upload(t *gocomms.Tensor, b []byte) error { return cuda.CopyTensor(t, b, true) }

// download copies t, a tensor on a GPU, into b.
func download(b []byte, t *gocomms.Tensor) error { return cuda.CopyTensor(t, b, false) }

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
