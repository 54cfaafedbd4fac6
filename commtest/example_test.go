package commtest_test

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
)

func ExampleSweep() {
	plan := commtest.Plan{DTypes: []gocomms.DType{gocomms.Int32}, Counts: []int{0, 5}}
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		rep, err := commtest.Sweep(ctx, c, plan)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			for _, t := range rep.Tally()[:3] {
				fmt.Printf("%s: %d cases, %d wrong\n", t.Collective, t.Cases, t.Wrong)
			}
		}
		return rep.Err()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// all_reduce: 16 cases, 0 wrong
	// reduce: 16 cases, 0 wrong
	// reduce_scatter: 16 cases, 0 wrong
}
