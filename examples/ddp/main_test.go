package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestTrainOverlapped trains a small model on ranks in this process, at
// 1, 2 and 3 ranks: the loss falls, the overlapped and serial runs end
// with the same model on every rank (run checks both), and the report
// gives both runs' steps.
func TestTrainOverlapped(t *testing.T) {
	for _, ranks := range []int{1, 2, 3} {
		t.Run(strconv.Itoa(ranks), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			o := options{ranks: ranks, layers: 5, width: 24, batch: 8, steps: 40, bucketLayers: 2}
			var out bytes.Buffer
			if err := run(ctx, &out, o); err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`loss ([0-9.]+) at the start, ([0-9.]+) after training`).FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("no losses in the report:\n%s", out.String())
			}
			before, _ := strconv.ParseFloat(m[1], 64)
			after, _ := strconv.ParseFloat(m[2], 64)
			if !(after < before) {
				t.Errorf("loss went from %v to %v, want a fall", before, after)
			}
			for _, row := range []string{"overlapped with backward", "after backward"} {
				if !bytes.Contains(out.Bytes(), []byte(row)) {
					t.Errorf("report has no row %q:\n%s", row, out.String())
				}
			}
		})
	}
}

func TestBadOptions(t *testing.T) {
	o := defaults
	o.bucketLayers = 0
	if err := run(context.Background(), &bytes.Buffer{}, o); err == nil {
		t.Error("zero layers a bucket: no error")
	}
}
