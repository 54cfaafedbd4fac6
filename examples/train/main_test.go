package main

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestTrainSurvivesACrash runs the example: the last of four processes
// crashes mid-run, the other three take the change at that step and
// train on, the loss falls by a clear factor, and the survivors end with
// the same model, to the bit.
func TestTrainSurvivesACrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := defaults
	o.epochs = 6
	o.crashAt = 2*stepsPerEpoch + 3
	res, err := train(ctx, t.Output(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []change{{o.crashAt, 4, 3}}; !slices.Equal(res.changes, want) {
		t.Errorf("membership changes %v, want %v", res.changes, want)
	}
	if len(res.losses) != o.epochs+1 {
		t.Fatalf("%d losses, want one at the start and one an epoch: %v", len(res.losses), res.losses)
	}
	if first, last := res.losses[0], res.losses[o.epochs]; !(last < first/5) {
		t.Errorf("loss went from %.5f to %.5f, want a fall by 5 times at least", first, last)
	}
	if len(res.models) != 3 {
		t.Fatalf("%d survivors, want 3", len(res.models))
	}
	for id, theta := range res.models {
		if !slices.Equal(theta, res.models[0]) {
			t.Errorf("process %d's model differs from process 0's", id)
		}
	}
}
