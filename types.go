package gocomms

import (
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// Tensor is contiguous memory with a dtype, a shape and a device.
type Tensor = tensor.Tensor

// DType is an element type.
type DType = tensor.DType

// The element types every collective moves. float16 and bfloat16 reduce with
// float32 accumulation per element.
const (
	Bool     = tensor.Bool
	Int8     = tensor.Int8
	Int16    = tensor.Int16
	Int32    = tensor.Int32
	Int64    = tensor.Int64
	Uint8    = tensor.Uint8
	Uint16   = tensor.Uint16
	Uint32   = tensor.Uint32
	Uint64   = tensor.Uint64
	Float16  = tensor.Float16
	BFloat16 = tensor.BFloat16
	Float32  = tensor.Float32
	Float64  = tensor.Float64
)

// Device says where a communicator's tensors live.
type Device = tensor.Device

// CPU is host memory.
var CPU = tensor.CPU

// CUDA returns the GPU with the given ordinal, as the CUDA driver numbers
// them in this process (CUDA_VISIBLE_DEVICES chooses which it sees).
func CUDA(index int) Device { return tensor.CUDA(index) }

// ReduceOp combines the contributions of every rank.
type ReduceOp = reduce.Op

// The reduction operators. Bitwise operators take integers and bool; Avg
// takes every numeric dtype (integers divide truncating toward zero);
// PreMulSum takes floats.
var (
	Sum     = reduce.New(reduce.Sum)
	Product = reduce.New(reduce.Product)
	Min     = reduce.New(reduce.Min)
	Max     = reduce.New(reduce.Max)
	BAnd    = reduce.New(reduce.BAnd)
	BOr     = reduce.New(reduce.BOr)
	BXor    = reduce.New(reduce.BXor)
	Avg     = reduce.New(reduce.Avg)
)

// PreMulSum sums the contributions, each multiplied by factor.
func PreMulSum(factor float64) ReduceOp { return reduce.PreMul(factor) }

// FromSlice returns a 1-D CPU tensor sharing s's memory.
func FromSlice[T tensor.Element](s []T) *Tensor { return tensor.FromSlice(s) }

// NewTensor returns a zero-filled CPU tensor.
func NewTensor(dt DType, shape ...int) (*Tensor, error) { return tensor.New(dt, shape...) }

// As returns a typed view of t's memory, without copying.
func As[T tensor.Element](t *Tensor) ([]T, error) { return tensor.As[T](t) }
