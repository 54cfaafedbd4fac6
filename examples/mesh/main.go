// Command mesh runs 8 ranks arranged as a 2 × 4 mesh, two data-parallel
// replicas ("dp") of four tensor-parallel ranks ("tp"), as torch's
// init_device_mesh arranges them, and computes one step of a sharded
// matrix-vector product with both kinds of parallelism:
//
//   - each replica takes its own input vector x (its batch);
//   - the matrix W is split by columns over the tp ranks: each holds a
//     quarter of the columns, and the quarter of x they multiply;
//   - the partial products are summed over tp (an all-reduce along "tp"),
//     which gives every rank of a replica y = W·x;
//   - y is averaged over the replicas (an all-reduce along "dp"), as
//     gradients are in data-parallel training.
//
// It prints each rank's coordinates and the averaged y, the same on every
// rank.
//
//	go run ./examples/mesh
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gocomms/gocomms"
)

// The mesh and the problem: W is rows × cols, its columns split over tp.
const (
	dp, tp     = 2, 4
	rows, cols = 3, 8
)

func main() {
	if _, err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// weight is W's element (i, j); input is replica d's x_j.
func weight(i, j int) float64 { return float64(i+1) * float64(j-3) / 4 }
func input(d, j int) float64  { return float64(d*cols+j) / 8 }

// run computes the averaged y on every rank and returns each rank's, by
// rank.
func run(ctx context.Context, w io.Writer) ([][]float64, error) {
	ys := make([][]float64, dp*tp)
	var mu sync.Mutex
	err := gocomms.RunLocal(ctx, dp*tp, func(ctx context.Context, c *gocomms.Comm) error {
		m, err := gocomms.NewMesh(ctx, c, []int{dp, tp}, []string{"dp", "tp"})
		if err != nil {
			return err
		}
		defer m.Finalize(ctx)
		at := m.Coords()
		d, t := at[0], at[1]
		// This rank's columns of W and the matching part of its replica's x.
		per := cols / tp
		y := make([]float64, rows)
		for i := range rows {
			for j := t * per; j < (t+1)*per; j++ {
				y[i] += weight(i, j) * input(d, j)
			}
		}
		yt := gocomms.FromSlice(y)
		if err := m.Dim("tp").AllReduce(ctx, yt, gocomms.Sum); err != nil {
			return err
		}
		if err := m.Dim("dp").AllReduce(ctx, yt, gocomms.Avg); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		ys[c.Rank()] = y
		fmt.Fprintf(w, "rank %d at dp=%d tp=%d: y = %v\n", c.Rank(), d, t, y)
		return nil
	})
	return ys, err
}
