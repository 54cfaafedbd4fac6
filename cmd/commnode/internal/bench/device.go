package bench

import (
	"unsafe"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// device holds a GPU communicator's buffers: tensors on the device that
// the ops run on, each shadowed by host bytes (bench.send, bench.recv)
// that patterns are written to and results checked in.
type device struct {
	send, recv *gocomms.Tensor // of Uint8; nil where the host buffer is
}

// newDevice allocates the device buffers of b's host ones.
func newDevice(c *gocomms.Comm, b *bench) (*device, error) {
	d := &device{}
	alloc := func(host []byte) (*gocomms.Tensor, error) {
		if host == nil {
			return nil, nil
		}
		return c.Alloc(gocomms.Uint8, len(host))
	}
	var err error
	if d.send, err = alloc(b.send); err != nil {
		return nil, err
	}
	if d.recv, err = alloc(b.recv); err != nil {
		return nil, err
	}
	return d, nil
}

// view returns the device tensor of dt that sub, a slice of the host
// buffer host, shadows.
func (d *device) view(dt gocomms.DType, host []byte, t *gocomms.Tensor, sub []byte) (*gocomms.Tensor, error) {
	off := 0
	if len(sub) > 0 {
		off = int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(host))))
	}
	mem, base := t.Memory()
	return tensor.OnDevice(t.Device(), mem, base+off, dt, len(sub)/dt.Size())
}

// copy moves a host buffer to its tensor, or back.
func (d *device) copy(t *gocomms.Tensor, host []byte, up bool) error {
	if t == nil {
		return nil
	}
	return cuda.CopyTensor(t, host, up)
}

// free lets go of the device buffers.
func (d *device) free(c *gocomms.Comm) error {
	for _, t := range []*gocomms.Tensor{d.send, d.recv} {
		if t != nil {
			if err := c.Free(t); err != nil {
				return err
			}
		}
	}
	return nil
}
