package gocomms

import (
	"errors"

	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// hostStage moves the host tensors of an operation the communicator
// issues for itself (a split's exchange) to its device when that is a
// GPU, whose operations take only its tensors, and their results back.
// On other devices it passes tensors through.
type hostStage struct {
	c     *Comm
	hosts []*Tensor // by the place of each copy in devs
	devs  []*Tensor
	outs  []bool // devs[i] is an output: copied back
	err   error  // the first failure
}

func (c *Comm) hostStage() *hostStage { return &hostStage{c: c} }

// of returns t, a host tensor, or its copy on the GPU, filled from t
// unless it is an output.
func (st *hostStage) of(t *Tensor, out bool) *Tensor {
	if st.c.cfg.Device.Type != tensor.DeviceCUDA || st.err != nil {
		return t
	}
	d, err := st.c.Alloc(t.DType(), t.Numel())
	if err != nil {
		st.err = err
		return t
	}
	st.hosts, st.devs, st.outs = append(st.hosts, t), append(st.devs, d), append(st.outs, out)
	if !out {
		st.err = st.copy(d, t, true)
	}
	return d
}

// copy moves the bytes of t to d, or back.
func (st *hostStage) copy(d, t *Tensor, up bool) error { return cuda.CopyTensor(d, t.Bytes(), up) }

// done copies the outputs back when the operation succeeded, and frees
// the copies; it returns err joined with what failed.
func (st *hostStage) done(err error) error {
	if st == nil {
		return err
	}
	errs := []error{err}
	for i, d := range st.devs {
		if err == nil && st.outs[i] {
			errs = append(errs, st.copy(d, st.hosts[i], false))
		}
		errs = append(errs, st.c.Free(d))
	}
	st.devs, st.hosts, st.outs = nil, nil, nil
	return errors.Join(errs...)
}
