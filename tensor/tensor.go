package tensor

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Tensor is a dense, contiguous, row-major buffer of one dtype with a shape
// and a device. Tensors made by this package live on the CPU and their data
// is ordinary Go memory, shared by every view of it.
//
// A Tensor's metadata never changes after construction; views are new
// Tensors over the same bytes. Methods on a nil *Tensor return zero answers
// (Invalid, 0, nil, "tensor(nil)") instead of panicking, except the
// index-based accessors, which panic like an out-of-range slice index.
//
// A tensor on another device holds no Go memory: Bytes returns nil and As
// fails. NewMeta makes one on the meta device, which has no memory at
// all; OnDevice one that views an accelerator's memory.
type Tensor struct {
	data   []byte
	dtype  DType
	shape  []int
	numel  int
	device Device
	mem    Memory // off the host: what the tensor views, from byte off
	off    int
}

// Memory is an allocation on an accelerator that tensors view. The
// package that allocated it knows what it is (gpu/cuda's DeviceMemory);
// this one knows only its length in bytes.
type Memory interface {
	Len() int
}

var errNil = errors.New("tensor: nil tensor")

// numelOf validates shape and returns its element count, failing on
// negative dimensions or a byte size that would overflow int.
func numelOf(dt DType, shape []int) (int, error) {
	if !dt.Valid() {
		return 0, fmt.Errorf("tensor: invalid dtype %v", dt)
	}
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor: negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt/dt.Size()/d {
			return 0, fmt.Errorf("tensor: shape %v of %v is too large", shape, dt)
		}
		n *= d
	}
	return n, nil
}

func cloneShape(shape []int) []int {
	if len(shape) == 0 {
		return nil
	}
	return append([]int(nil), shape...)
}

// New returns a zero-filled CPU tensor. No shape means a scalar (one
// element); a zero dimension gives an empty tensor.
func New(dt DType, shape ...int) (*Tensor, error) {
	n, err := numelOf(dt, shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{
		data:   make([]byte, n*dt.Size()),
		dtype:  dt,
		shape:  cloneShape(shape),
		numel:  n,
		device: CPU,
	}, nil
}

// NewMeta returns a tensor on the meta device: a dtype and a shape, and
// no memory.
func NewMeta(dt DType, shape ...int) (*Tensor, error) {
	n, err := numelOf(dt, shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape), numel: n, device: Meta}, nil
}

// OnDevice returns a tensor on device d (an accelerator, not the CPU or
// the meta device) viewing mem from byte offset off: no copy is made.
// The shape's bytes must lie within mem, and off must be a multiple of
// the element size.
func OnDevice(d Device, mem Memory, off int, dt DType, shape ...int) (*Tensor, error) {
	if d.Type == DeviceCPU || d.Type == DeviceMeta {
		return nil, fmt.Errorf("tensor: OnDevice needs an accelerator, not %v", d)
	}
	if mem == nil {
		return nil, fmt.Errorf("tensor: OnDevice on %v without memory", d)
	}
	n, err := numelOf(dt, shape)
	if err != nil {
		return nil, err
	}
	if off < 0 || off%dt.Size() != 0 || n*dt.Size() > mem.Len()-off {
		return nil, fmt.Errorf("tensor: %d bytes of %v at offset %d do not fit %d bytes of %v memory",
			n*dt.Size(), dt, off, mem.Len(), d)
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape), numel: n, device: d, mem: mem, off: off}, nil
}

// FromSlice returns a 1-D CPU tensor over s's memory: no copy is made, so
// writes through either are visible through the other.
func FromSlice[T Element](s []T) *Tensor {
	var z T
	size := int(unsafe.Sizeof(z))
	return &Tensor{
		data:   unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*size),
		dtype:  DTypeOf[T](),
		shape:  []int{len(s)},
		numel:  len(s),
		device: CPU,
	}
}

// FromBytes returns a CPU tensor over b (no copy). With no shape the tensor
// is 1-D and len(b) must be a multiple of the element size; otherwise
// len(b) must equal the shape's element count times the element size.
// For Bool, each byte should be 0 or 1, as Go requires of bool values.
func FromBytes(dt DType, b []byte, shape ...int) (*Tensor, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("tensor: invalid dtype %v", dt)
	}
	if len(shape) == 0 {
		if len(b)%dt.Size() != 0 {
			return nil, fmt.Errorf("tensor: %d bytes is not a whole number of %v elements", len(b), dt)
		}
		shape = []int{len(b) / dt.Size()}
	}
	n, err := numelOf(dt, shape)
	if err != nil {
		return nil, err
	}
	if n*dt.Size() != len(b) {
		return nil, fmt.Errorf("tensor: shape %v of %v needs %d bytes, got %d", shape, dt, n*dt.Size(), len(b))
	}
	return &Tensor{
		data:   b[:len(b):len(b)],
		dtype:  dt,
		shape:  cloneShape(shape),
		numel:  n,
		device: CPU,
	}, nil
}

// As returns t's elements as a []T sharing t's memory. It fails if t is nil,
// not on the CPU, or T does not match t's dtype.
//
// The storage may be unaligned for T when it came from FromBytes with an
// offset slice; that is fine for loads and stores on amd64 and arm64, the
// platforms gocomms targets.
func As[T Element](t *Tensor) ([]T, error) {
	if t == nil {
		return nil, errNil
	}
	if want := DTypeOf[T](); t.dtype != want {
		return nil, fmt.Errorf("tensor: As[%v] on a %v tensor", want, t.dtype)
	}
	if !t.device.IsCPU() {
		return nil, fmt.Errorf("tensor: As on a %v tensor: no host memory", t.device)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(t.data))), t.numel), nil
}

// DType returns the element type (Invalid for nil).
func (t *Tensor) DType() DType {
	if t == nil {
		return Invalid
	}
	return t.dtype
}

// Shape returns a copy of the dimensions; a scalar has an empty shape.
func (t *Tensor) Shape() []int {
	if t == nil {
		return nil
	}
	return append([]int{}, t.shape...)
}

// Dim returns the number of dimensions (0 for scalars and nil).
func (t *Tensor) Dim() int {
	if t == nil {
		return 0
	}
	return len(t.shape)
}

// Numel returns the number of elements (0 for nil).
func (t *Tensor) Numel() int {
	if t == nil {
		return 0
	}
	return t.numel
}

// NBytes returns Numel times the element size.
func (t *Tensor) NBytes() int {
	if t == nil {
		return 0
	}
	return t.numel * t.dtype.Size()
}

// Bytes returns the tensor's storage itself (not a copy), NBytes long; nil
// for nil and for tensors off the CPU.
func (t *Tensor) Bytes() []byte {
	if t == nil {
		return nil
	}
	return t.data
}

// Memory returns the accelerator memory a tensor made by OnDevice, or a
// view of one, views, and the byte offset where its elements start; nil
// for tensors on the CPU and the meta device.
func (t *Tensor) Memory() (Memory, int) {
	if t == nil {
		return nil, 0
	}
	return t.mem, t.off
}

// Device returns where the data lives (CPU for nil).
func (t *Tensor) Device() Device {
	if t == nil {
		return CPU
	}
	return t.device
}

// Reshape returns a view with a new shape and the same number of elements.
// One dimension may be -1 and is then inferred, as in torch.
func (t *Tensor) Reshape(shape ...int) (*Tensor, error) {
	if t == nil {
		return nil, errNil
	}
	orig := shape
	shape = cloneShape(shape)
	infer := -1
	for i, d := range shape {
		if d == -1 && infer < 0 {
			infer = i
			shape[i] = 1
		}
	}
	n, err := numelOf(t.dtype, shape)
	if err != nil {
		return nil, fmt.Errorf("tensor: cannot reshape %v into %v: %w", t.shape, orig, err)
	}
	if infer >= 0 {
		if n == 0 || t.numel%n != 0 {
			return nil, fmt.Errorf("tensor: cannot reshape %v into %v", t.shape, orig)
		}
		shape[infer] = t.numel / n
		n = t.numel
	}
	if n != t.numel {
		return nil, fmt.Errorf("tensor: cannot reshape %v (%d elements) into %v (%d elements)", t.shape, t.numel, shape, n)
	}
	v := *t
	v.shape = shape
	return &v, nil
}

// Narrow returns a flat 1-D view of elements [start, start+n) of t in
// row-major order. The view's capacity ends at start+n, so appending to its
// Bytes cannot overwrite the rest of t.
func (t *Tensor) Narrow(start, n int) (*Tensor, error) {
	v := new(Tensor)
	if err := t.NarrowInto(v, start, n); err != nil {
		return nil, err
	}
	return v, nil
}

// NarrowInto is Narrow made in *v, which it overwrites, so that a caller
// cutting many views can keep them in one slice and reuse it. v may be t.
// A copy of *v by value shares v's shape: reuse v only once copies are gone.
func (t *Tensor) NarrowInto(v *Tensor, start, n int) error {
	if t == nil {
		return errNil
	}
	if start < 0 || n < 0 || start > t.numel-n {
		return fmt.Errorf("tensor: narrow [%d, %d+%d) out of range for %d elements", start, start, n, t.numel)
	}
	data := t.data
	if data != nil {
		size := t.dtype.Size()
		lo, hi := start*size, (start+n)*size
		data = data[lo:hi:hi]
	}
	off := t.off
	if t.mem != nil {
		off += start * t.dtype.Size()
	}
	*v = Tensor{data: data, dtype: t.dtype, numel: n, device: t.device, mem: t.mem, off: off}
	// The one dimension of a 1-D view is its element count: sharing it
	// makes the view without allocating its shape.
	v.shape = unsafe.Slice(&v.numel, 1)
	return nil
}

// Rows returns the size of dimension 0: Numel for 1-D tensors, 1 for
// scalars, 0 for nil.
func (t *Tensor) Rows() int {
	if t == nil {
		return 0
	}
	if len(t.shape) == 0 {
		return 1
	}
	return t.shape[0]
}

// RowElems returns the number of elements in one row: the product of the
// dimensions after the first (1 for 1-D tensors and scalars, 0 for nil).
// Rows()*RowElems() == Numel() always holds, so for a shape like [0 3] it is
// 3: the size a row would have, which is what offset arithmetic wants.
func (t *Tensor) RowElems() int {
	if t == nil {
		return 0
	}
	n := 1
	for i := 1; i < len(t.shape); i++ {
		n *= t.shape[i]
	}
	return n
}

// Clone returns a deep copy with its own storage (nil for nil). This
// package cannot allocate on an accelerator: a clone of a tensor there
// copies its metadata only, and views the same memory.
func (t *Tensor) Clone() *Tensor {
	if t == nil {
		return nil
	}
	c := *t
	c.shape = cloneShape(t.shape)
	if t.data != nil {
		c.data = append(make([]byte, 0, len(t.data)), t.data...)
	}
	return &c
}

// String describes the tensor's metadata, e.g. "tensor(float32, [2 3], cpu)".
func (t *Tensor) String() string {
	if t == nil {
		return "tensor(nil)"
	}
	shape := t.shape
	if shape == nil {
		shape = []int{}
	}
	return fmt.Sprintf("tensor(%v, %v, %v)", t.dtype, shape, t.device)
}
