package gocomms

import (
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
)

// Alloc returns a zeroed tensor of dt and shape in memory registered with
// the communicator, as torchcomms' memory allocator gives: where the
// ranks of a host share memory, a collective on it lets a peer of this
// host read it in place, one copy where an unregistered tensor takes two.
// Use it for the buffers a job reduces again and again (gradient
// buckets). It stays valid until Free, even after Finalize; on a backend
// without registration it is ordinary memory.
func (c *Comm) Alloc(dt DType, shape ...int) (*Tensor, error) {
	meta, err := tensor.NewMeta(dt, shape...) // checks the shape, and sizes it
	if err != nil {
		return nil, commerr.Invalid("%v", err)
	}
	a, ok := c.backend.(backend.Allocator)
	if !ok || meta.NBytes() == 0 && c.cfg.Device.IsCPU() {
		return tensor.New(dt, shape...)
	}
	t, err := a.Alloc(dt, shape)
	if err != nil {
		return nil, &OpError{Comm: c.cfg.Name, Op: "alloc", Rank: c.cfg.Rank, Err: err}
	}
	return t, nil
}

// Free lets go of a tensor Alloc returned: its memory must not be used
// afterwards. It fails for a tensor Alloc did not return, or one freed
// already; on a backend without registration it does nothing.
func (c *Comm) Free(t *Tensor) error {
	if err := c.checkTensor("tensor", t); err != nil {
		return &OpError{Comm: c.cfg.Name, Op: "free", Rank: c.cfg.Rank, Err: err}
	}
	a, ok := c.backend.(backend.Allocator)
	if !ok || t.NBytes() == 0 && c.cfg.Device.IsCPU() {
		return nil
	}
	if err := a.Free(t); err != nil {
		return &OpError{Comm: c.cfg.Name, Op: "free", Rank: c.cfg.Rank, Err: err}
	}
	return nil
}
