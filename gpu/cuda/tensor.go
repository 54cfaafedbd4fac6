package cuda

import "github.com/gocomms/gocomms/tensor"

// TensorMemory returns the device memory a tensor on a GPU views, and the
// byte offset of its elements there; ErrInvalid for a tensor whose memory
// is not this package's.
func TensorMemory(t *tensor.Tensor) (*DeviceMemory, int, error) {
	mem, off := t.Memory()
	dm, ok := mem.(*DeviceMemory)
	if !ok {
		return nil, 0, invalid("TensorMemory", "%v's memory is %T, not a DeviceMemory", t, mem)
	}
	return dm, off, nil
}

// CopyTensor copies host bytes b into t, a tensor on a GPU whose memory is
// Shared's (up), or t into b, synchronously; len(b) bytes from t's first
// element.
func CopyTensor(t *tensor.Tensor, b []byte, up bool) error {
	if len(b) == 0 {
		return nil
	}
	mem, off, err := TensorMemory(t)
	if err != nil {
		return err
	}
	ctx, err := Shared(t.Device().Index)
	if err != nil {
		return err
	}
	if up {
		return ctx.CopyHtoD(mem, off, b)
	}
	return ctx.CopyDtoH(b, mem, off)
}
