package gocomms_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/transport/tcp"
)

// uniformOnly are the schedules that serve only uniform counts, which
// the sweep's vector forms are not: TestBruckAllToAll runs them.
var uniformOnly = []string{"bruck"}

// scheduleChoices picks, for the i-th run, the i-th schedule of every
// collective (its last, for one with fewer), so that a few runs together
// take every schedule, and names what they picked.
func scheduleChoices(i int) ([]gocomms.Option, string) {
	var opts []gocomms.Option
	var names []string
	for _, k := range algorithms.Kinds() {
		algs := algorithms.Algorithms(k)
		if k == algorithms.AllToAll {
			algs = slices.DeleteFunc(algs, func(a string) bool { return slices.Contains(uniformOnly, a) })
		}
		name := algs[min(i, len(algs)-1)]
		opts = append(opts, gocomms.WithAlgorithm(gocomms.OpName(k.String()), name))
		names = append(names, k.String()+"="+name)
	}
	return opts, strings.Join(names, ",")
}

// TestEveryScheduleEndToEnd runs every collective, its single and vector
// forms included, with every schedule of the library, through the engine
// at every world size of the sweep and 17, against the reference; over
// loopback TCP too, at a few sizes.
func TestEveryScheduleEndToEnd(t *testing.T) {
	most := 0
	for _, k := range algorithms.Kinds() {
		most = max(most, len(algorithms.Algorithms(k)))
	}
	plan := commtest.Plan{DTypes: []gocomms.DType{gocomms.Float32, gocomms.Int64}}
	for i := range most {
		opts, names := scheduleChoices(i)
		// Two ranks a host, where the size allows: hierarchical schedules
		// run in two levels.
		opts = append(opts, gocomms.WithLocalSize(2))
		for _, n := range append(worldSizes(), 17) {
			t.Run(fmt.Sprintf("choice=%d/ranks=%d", i, n), func(t *testing.T) {
				plan.Counts = sweepCounts(n)
				sweep(t, n, plan, opts...)
			})
		}
		for _, n := range []int{3, 4} {
			t.Run(fmt.Sprintf("choice=%d/tcp/ranks=%d", i, n), func(t *testing.T) {
				plan.Counts = sweepCounts(n)
				sweep(t, n, plan, append(opts, gocomms.WithNetwork(tcp.New()))...)
			})
		}
		t.Logf("choice %d: %s", i, names)
	}
}

// TestBruckAllToAll runs Bruck's all-to-all, which serves uniform counts
// only, through the engine at every sweep size and 17.
func TestBruckAllToAll(t *testing.T) {
	for _, n := range append(worldSizes(), 17) {
		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			const per = 3
			in, out := make([]int64, per*n), make([]int64, per*n)
			for q := range n {
				for i := range per {
					in[q*per+i] = int64(c.Rank()*1000 + q*10 + i) // to rank q, element i
				}
			}
			if err := c.AllToAllSingle(ctx, gocomms.FromSlice(out), gocomms.FromSlice(in)); err != nil {
				return err
			}
			for q := range n {
				for i := range per {
					if want := int64(q*1000 + c.Rank()*10 + i); out[q*per+i] != want {
						return fmt.Errorf("rank %d: element %d from rank %d is %d, want %d", c.Rank(), i, q, out[q*per+i], want)
					}
				}
			}
			return nil
		}, gocomms.WithAlgorithm(gocomms.OpAllToAll, "bruck"))
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}
