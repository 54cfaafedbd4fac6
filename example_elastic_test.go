package gocomms_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/quorum"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// Three processes (goroutines here) of a data-parallel job meet through
// the job's store, average a gradient over the members that contributed,
// and would go on without any that failed.
func ExampleJoinElastic() {
	ctx := context.Background()
	cfg := gocomms.ElasticConfig{
		Quorum: quorum.Config{Store: store.NewMemory(), Job: "train"},
		Expect: 3, // the job's size at launch; 0 for a replacement
	}
	net := transport.NewInproc()
	means := make([]float64, 3)
	var wg sync.WaitGroup
	for p := range 3 {
		wg.Go(func() {
			e, err := gocomms.JoinElastic(ctx, gocomms.NativeBackend, gocomms.CPU, "train", cfg, gocomms.WithNetwork(net))
			if err != nil {
				fmt.Println(err)
				return
			}
			defer e.Finalize(ctx)
			params := []float64{0}
			if err := e.Heal(ctx, gocomms.FromSlice(params)); err != nil { // gives newcomers the state
				fmt.Println(err)
				return
			}
			grad := []float64{float64(10 * (p + 1))}
			contributed, err := e.AllReduce(ctx, gocomms.FromSlice(grad), gocomms.Sum)
			if err != nil {
				fmt.Println(err)
				return
			}
			means[p] = grad[0] / float64(len(contributed))
		})
	}
	wg.Wait()
	fmt.Println(means)
	// Output: [20 20 20]
}
