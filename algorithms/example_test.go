package algorithms_test

import (
	"fmt"

	"github.com/gocomms/gocomms/algorithms"
)

// Rank 0's part of a 3-rank ring AllReduce of 7 float32s, in messages of at
// most 2 elements: a reduce-scatter then an all-gather over segments of 3, 2
// and 2 elements. Deps show the pipeline: each send waits only for the chunk
// it forwards.
func ExampleBuild() {
	s, err := algorithms.Build(algorithms.Spec{
		Kind:       algorithms.AllReduce,
		Rank:       0,
		Size:       3,
		Counts:     []int{7},
		ElemSize:   4,
		ChunkBytes: 8,
		Algorithm:  "ring",
	})
	if err != nil {
		panic(err)
	}
	for i, st := range s.Steps {
		fmt.Println(i, st)
	}
	// Output:
	// 0 send in[0][0:2] -> 1#0 deps[]
	// 1 recv_reduce out[0][5:7] = in[0][5:7] + 2#0 deps[]
	// 2 send in[0][2:3] -> 1#1 deps[]
	// 3 send out[0][5:7] -> 1#2 deps[1]
	// 4 recv_reduce out[0][3:5] = in[0][3:5] + 2#1 deps[]
	// 5 send out[0][3:5] -> 1#3 deps[4]
	// 6 recv out[0][0:2] <- 2#2 deps[]
	// 7 recv out[0][2:3] <- 2#3 deps[]
	// 8 send out[0][0:2] -> 1#4 deps[6]
	// 9 recv out[0][5:7] <- 2#4 deps[3]
	// 10 send out[0][2:3] -> 1#5 deps[7]
}

// The driving loop of an executor, here with every message already arrived.
func ExampleProgress() {
	s, _ := algorithms.Build(algorithms.Spec{Kind: algorithms.Barrier, Rank: 0, Size: 4, ElemSize: 1})
	p := algorithms.NewProgress(s)
	ready := p.Start(nil)
	fmt.Println("ready at start:", ready, "waiting for", p.Waiting(nil))
	for _, m := range [][2]int{{2, 0}, {3, 0}} { // (peer, tag): out of order
		var step int
		ready, step, _ = p.Arrive(m[0], m[1], ready)
		fmt.Printf("message from %d matches step %d\n", m[0], step)
	}
	for len(ready) > 0 {
		i := ready[0]
		fmt.Println("run", s.Steps[i])
		ready = p.Complete(i, ready[1:])
	}
	fmt.Println("done:", p.Done())
	// Output:
	// ready at start: [0] waiting for [2 3]
	// message from 2 matches step 3
	// message from 3 matches step 1
	// run send scratch[0][0:0] -> 1#0 deps[]
	// run recv scratch[0][0:0] <- 3#0 deps[0]
	// run send scratch[0][0:0] -> 2#0 deps[1]
	// run recv scratch[0][0:0] <- 2#0 deps[2]
	// done: true
}
