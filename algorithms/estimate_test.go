package algorithms

import (
	"errors"
	"math"
	"testing"
)

// TestEstimateMatchesTheAlphaBetaFormulas checks the estimate against the
// textbook costs where a schedule's rounds do not overlap: recursive
// doubling takes log2 p rounds of α + nβ, the ring 2(p-1) of α + (n/p)β,
// the ring all-gather p-1 of α + (n/p)β; and a broadcast chain of chunks
// of c bytes takes (p-1)(α + cβ) for the first chunk to reach the end,
// the others following a port's cβ apart.
func TestEstimateMatchesTheAlphaBetaFormulas(t *testing.T) {
	m := Model{Alpha: 10e-6, BytesPerSecond: 1e9}
	beta := 1 / m.BytesPerSecond
	for _, tc := range []struct {
		name string
		spec Spec
		want float64
	}{
		{"recursive doubling", Spec{Kind: AllReduce, Size: 4, Counts: []int{1000}, ElemSize: 4, Algorithm: "recursive_doubling"}, 2 * (m.Alpha + 4000*beta)},
		{"ring all-reduce", Spec{Kind: AllReduce, Size: 4, Counts: []int{1000}, ElemSize: 4, Algorithm: "ring"}, 6 * (m.Alpha + 1000*beta)},
		{"ring all-gather", Spec{Kind: AllGather, Size: 5, Counts: []int{100, 100, 100, 100, 100}, ElemSize: 8, Algorithm: "ring"}, 4 * (m.Alpha + 800*beta)},
		{"chain", Spec{Kind: Broadcast, Size: 4, Counts: []int{1000}, ElemSize: 4, ChunkBytes: 400, Algorithm: "chain"}, 3*(m.Alpha+400*beta) + 9*400*beta},
	} {
		got, err := Estimate(EveryRank(tc.spec), m)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: estimate %.3g s, want %.3g s", tc.name, got, tc.want)
		}
	}
}

// TestEstimateChargesTheSenderPerMessage checks the overhead: a one-shot
// all-reduce on 3 ranks sends two messages from each, one after the other,
// so the last lands after 2(o + w) + α.
func TestEstimateChargesTheSenderPerMessage(t *testing.T) {
	m := Model{Alpha: 10e-6, Overhead: 50e-6, BytesPerSecond: 1e9}
	got, err := Estimate(EveryRank(Spec{Kind: AllReduce, Size: 3, Counts: []int{1}, ElemSize: 4, Algorithm: "direct"}), m)
	if want := 2*(m.Overhead+4/m.BytesPerSecond) + m.Alpha; err != nil || math.Abs(got-want) > 1e-15 {
		t.Fatalf("estimate %.6g s (%v), want %.6g s", got, err, want)
	}
}

// TestEstimateChargesLocalLinksApart checks that ranks of one node use the
// local figures: a two-rank all-reduce on one node takes the local
// latency, on two nodes the network's.
func TestEstimateChargesLocalLinksApart(t *testing.T) {
	m := Model{Alpha: 10e-6, BytesPerSecond: 1e9, LocalAlpha: 1e-6, LocalBytesPerSecond: 100e9}
	spec := Spec{Kind: AllReduce, Size: 2, Counts: []int{1}, ElemSize: 4, Algorithm: "recursive_doubling"}
	for _, tc := range []struct {
		local int
		want  float64
	}{{2, 1e-6 + 4/100e9}, {1, 10e-6 + 4/1e9}, {0, 10e-6 + 4/1e9}} {
		spec.LocalSize = tc.local
		got, err := Estimate(EveryRank(spec), m)
		if err != nil || math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("local size %d: %.3g s (%v), want %.3g s", tc.local, got, err, tc.want)
		}
	}
	if _, err := Estimate(EveryRank(spec), Model{Alpha: 1e-6}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("a model without bandwidth: %v, want ErrBadSpec", err)
	}
}
