package main

import (
	"context"
	"io"
	"math"
	"testing"
)

// TestMesh checks every rank's y against W·x averaged over the replicas,
// computed here without a communicator.
func TestMesh(t *testing.T) {
	ys, err := run(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, rows)
	for d := range dp {
		for i := range rows {
			for j := range cols {
				want[i] += weight(i, j) * input(d, j) / dp
			}
		}
	}
	for r, y := range ys {
		for i := range rows {
			if math.Abs(y[i]-want[i]) > 1e-12 {
				t.Fatalf("rank %d: y = %v, want %v", r, y, want)
			}
		}
	}
}
