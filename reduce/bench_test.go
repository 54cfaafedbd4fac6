package reduce

import (
	"fmt"
	"testing"

	"github.com/gocomms/gocomms/tensor"
)

// BenchmarkCombine measures Sum throughput; SetBytes counts one operand
// (the buffer size), so MB/s is the rate at which a reduction step consumes
// incoming data. float16 is included because it is the dtype that pays for
// conversions the most.
func BenchmarkCombine(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16, tensor.Int32} {
		for _, size := range []int{64 << 10, 1 << 20, 64 << 20} {
			b.Run(fmt.Sprintf("%v/sum/%dKiB", dt, size>>10), func(b *testing.B) {
				dst, x := benchBuffers(dt, size)
				op := New(Sum)
				b.SetBytes(int64(size))
				for b.Loop() {
					Combine(op, dt, dst, dst, x)
				}
			})
		}
	}
}

// benchBuffers returns two buffers of ordinary small values (not zeros or
// subnormals, which can be unrepresentatively fast or slow).
func benchBuffers(dt tensor.DType, size int) (dst, x []byte) {
	dst, x = make([]byte, size), make([]byte, size)
	td, _ := tensor.FromBytes(dt, dst)
	tx, _ := tensor.FromBytes(dt, x)
	for i := range td.Numel() {
		td.SetFloat64(i, float64(i%7)-3)
		tx.SetFloat64(i, float64(i%5)*0.001)
	}
	return dst, x
}

// plainSumFloat32 is the hand-written loop the generic one must match.
func plainSumFloat32(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// BenchmarkGenericLoop compares the generic sum kernel with a hand-written
// float32 loop; their figures should be indistinguishable.
func BenchmarkGenericLoop(b *testing.B) {
	dstB, xB := benchBuffers(tensor.Float32, 64<<10)
	dst, x := view[float32](dstB), view[float32](xB)
	b.Run("generic", func(b *testing.B) {
		b.SetBytes(64 << 10)
		for b.Loop() {
			sumLoop(dst, dst, x)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(64 << 10)
		for b.Loop() {
			plainSumFloat32(dst, dst, x)
		}
	})
}
