package gocomms_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/topo"
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
		algs := algorithms.NewRegistry().Algorithms(k)
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
// loopback TCP and shared memory too, at a few sizes, and over a mix of
// both in one communicator.
func TestEveryScheduleEndToEnd(t *testing.T) {
	most := 0
	for _, k := range algorithms.Kinds() {
		most = max(most, len(algorithms.NewRegistry().Algorithms(k)))
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
			t.Run(fmt.Sprintf("choice=%d/shm/ranks=%d", i, n), func(t *testing.T) {
				if nvl.Host() == "" {
					t.Skip("no shared memory between processes here")
				}
				plan.Counts = sweepCounts(n)
				sweep(t, n, plan, append(opts, gocomms.WithNetwork(nvl.New()))...)
			})
		}
		t.Run(fmt.Sprintf("choice=%d/mixed/ranks=5", i), func(t *testing.T) {
			plan.Counts = sweepCounts(5)
			sweep(t, 5, plan, append(opts, gocomms.WithNetwork(mixedNetwork(t)))...)
		})
		t.Logf("choice %d: %s", i, names)
	}
}

// mixedNetwork joins shared memory and TCP as on a cluster, where some
// peers share a host and others do not: here a hash of the address says
// which, so that one communicator's links are some of each.
func mixedNetwork(t *testing.T) *topo.Network {
	if nvl.Host() == "" {
		t.Skip("no shared memory between processes here")
	}
	nw, err := topo.New(nvl.New(), tcp.New(tcp.WithListenHost("127.0.0.1")), func(addr string) bool {
		h := fnv.New32a()
		h.Write([]byte(addr))
		return h.Sum32()%2 == 0
	})
	if err != nil {
		t.Fatal(err)
	}
	return nw
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

// TestAllReduceGivesEveryRankTheSameBits sums float32 values whose sum
// depends on the order of addition with every all-reduce schedule, and
// requires every rank to end with the same bits: data-parallel replicas
// must not drift apart.
func TestAllReduceGivesEveryRankTheSameBits(t *testing.T) {
	const n = 1000
	for _, algo := range algorithms.NewRegistry().Algorithms(algorithms.AllReduce) {
		for _, p := range []int{3, 5, 8} {
			err := gocomms.RunLocal(context.Background(), p, func(ctx context.Context, c *gocomms.Comm) error {
				data := make([]float32, n)
				for i := range data {
					// Magnitudes far apart: rounding differs with the order.
					data[i] = float32(math.Pow(10, float64((c.Rank()*7+i)%9-4))) * float32(1+i%3)
				}
				if err := c.AllReduce(ctx, gocomms.FromSlice(data), gocomms.Sum); err != nil {
					return err
				}
				all := make([]float32, n*p)
				if err := c.AllGatherSingle(ctx, gocomms.FromSlice(all), gocomms.FromSlice(data)); err != nil {
					return err
				}
				for q := range p {
					for i, v := range all[q*n : (q+1)*n] {
						if math.Float32bits(v) != math.Float32bits(data[i]) {
							return fmt.Errorf("element %d: rank %d has %x, rank %d %x", i, c.Rank(), math.Float32bits(data[i]), q, math.Float32bits(v))
						}
					}
				}
				return nil
			}, gocomms.WithAlgorithm(gocomms.OpAllReduce, algo), gocomms.WithHints(map[string]string{gocomms.HintChunkBytes: "256"}))
			if err != nil {
				t.Errorf("%s on %d ranks: %v", algo, p, err)
			}
		}
	}
}
