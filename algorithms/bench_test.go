package algorithms

import (
	"fmt"
	"testing"
)

// ringSpec is rank 0 of a 16-rank AllReduce of 64 MiB of float32.
func ringSpec(chunkBytes int) Spec {
	return Spec{Kind: AllReduce, Rank: 0, Size: 16, Counts: []int{64 << 20 / 4}, ElemSize: 4, ChunkBytes: chunkBytes, Algorithm: "ring"}
}

var benchChunks = []int{DefaultChunkBytes, 64 << 10}

func BenchmarkBuildAllReduceRing(b *testing.B) {
	for _, cb := range benchChunks {
		spec := ringSpec(cb)
		b.Run(fmt.Sprintf("chunk=%dKiB", cb>>10), func(b *testing.B) { benchBuild(b, spec) })
	}
}

func BenchmarkProgressAllReduceRing(b *testing.B) {
	for _, cb := range benchChunks {
		s, err := Build(ringSpec(cb))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("chunk=%dKiB", cb>>10), func(b *testing.B) {
			p := NewProgress(s)
			ready := make([]int, 0, len(s.Steps))
			order := make([]int, 0, len(s.Steps))
			b.ReportAllocs()
			for b.Loop() {
				p.Reset()
				order = drive(p, ready[:0], order[:0])
			}
			b.ReportMetric(float64(len(s.Steps)), "steps")
		})
	}
}

// BenchmarkBuildRabenseifner100k builds rank 0's schedule of a 100,000-rank
// all-reduce of 1 MiB of float32: a rank that folds an extra rank in, so
// the longest of them.
func BenchmarkBuildRabenseifner100k(b *testing.B) {
	b.ReportAllocs()
	benchBuild(b, Spec{Kind: AllReduce, Rank: 0, Size: 100_000, Counts: []int{1 << 18}, ElemSize: 4, Algorithm: "rabenseifner"})
}

// benchBuild times building spec's schedule and reports its steps.
func benchBuild(b *testing.B, spec Spec) {
	var steps int
	for b.Loop() {
		s, err := Build(spec)
		if err != nil {
			b.Fatal(err)
		}
		steps = len(s.Steps)
	}
	b.ReportMetric(float64(steps), "steps")
}
