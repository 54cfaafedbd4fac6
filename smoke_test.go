package gocomms_test

import (
	"context"
	"testing"

	"github.com/gocomms/gocomms"
)

func TestSmokeAllReduce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			data := []float32{float32(c.Rank()), 1, 2}
			if err := c.AllReduce(ctx, gocomms.FromSlice(data), gocomms.Sum); err != nil {
				return err
			}
			t.Logf("n=%d rank %d: %v", n, c.Rank(), data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
