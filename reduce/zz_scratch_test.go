package reduce

import (
	"testing"

	"github.com/gocomms/gocomms/tensor"
)

func BenchmarkScratchBF16(b *testing.B) {
	d1, x := benchBuffers(tensor.BFloat16, 64<<10)
	d2 := make([]byte, len(d1))
	b.Run("alias", func(b *testing.B) {
		b.SetBytes(64 << 10)
		for b.Loop() {
			Combine(New(Sum), tensor.BFloat16, d1, d1, x)
		}
	})
	b.Run("noalias", func(b *testing.B) {
		b.SetBytes(64 << 10)
		for b.Loop() {
			Combine(New(Sum), tensor.BFloat16, d2, d1, x)
		}
	})
	b.Run("f32alias", func(b *testing.B) {
		d1, x := benchBuffers(tensor.Float32, 64<<10)
		b.SetBytes(64 << 10)
		for b.Loop() {
			Combine(New(Sum), tensor.Float32, d1, d1, x)
		}
	})
	b.Run("f32noalias", func(b *testing.B) {
		d1, x := benchBuffers(tensor.Float32, 64<<10)
		d2 := make([]byte, len(d1))
		b.SetBytes(64 << 10)
		for b.Loop() {
			Combine(New(Sum), tensor.Float32, d2, d1, x)
		}
	})
}
