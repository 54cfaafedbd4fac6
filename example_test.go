package gocomms_test

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms"
)

func ExampleRunLocal() {
	err := gocomms.RunLocal(context.Background(), 4, func(ctx context.Context, c *gocomms.Comm) error {
		data := []float32{float32(c.Rank()), 1}
		if err := c.AllReduce(ctx, gocomms.FromSlice(data), gocomms.Sum); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println(data) // 0+1+2+3, and 1 from each rank
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [6 4]
}
