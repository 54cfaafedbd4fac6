package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// Two ranks (goroutines here; processes under a launcher) create a
// communicator by hand: each names its rank and the size, and they meet
// through a shared store over a shared network. Under a launcher the
// options come from its variables and can be left out.
func ExampleNewComm() {
	ctx := context.Background()
	st, net := store.NewMemory(), transport.NewInproc()
	sums := make([][]int64, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			c, err := gocomms.NewComm(ctx, gocomms.NativeBackend, gocomms.CPU, "main",
				gocomms.WithRank(r), gocomms.WithSize(2), gocomms.WithStore(st), gocomms.WithNetwork(net))
			if err != nil {
				fmt.Println(err)
				return
			}
			defer c.Finalize(ctx)
			x := []int64{int64(r + 1), 10}
			if err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
				fmt.Println(err)
				return
			}
			sums[r] = x
		})
	}
	wg.Wait()
	fmt.Println(sums)
	// Output: [[3 20] [3 20]]
}

// Rank 0 writes into rank 1's window and signals it in the same
// operation; rank 1 takes no part in the write and only waits for the
// signal, after which the data is there.
func ExampleComm_NewWindow() {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		mem := make([]float64, 4)
		win, err := c.NewWindowFromTensor(ctx, gocomms.FromSlice(mem))
		if err != nil {
			return err
		}
		const slot = 0
		switch c.Rank() {
		case 0:
			// Elements 1 and 2 of rank 1's window; the signal adds 1 to its slot.
			if err := win.PutSignal(ctx, gocomms.FromSlice([]float64{2.5, 7}), 1, 1, slot, gocomms.SignalAdd, 1); err != nil {
				return err
			}
		case 1:
			if _, err := win.WaitSignal(ctx, slot, gocomms.SignalGE, 1); err != nil {
				return err
			}
			fmt.Println(mem)
		}
		return win.Close(ctx)
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [0 2.5 7 0]
}

// Rank 0 sends to rank 1, which receives; a matching Recv names the
// sender and a tensor of the same dtype and size.
func ExampleComm_Send() {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 0 {
			return c.Send(ctx, gocomms.FromSlice([]int32{1, 2, 3}), 1)
		}
		got := make([]int32, 3)
		if err := c.Recv(ctx, gocomms.FromSlice(got), 0); err != nil {
			return err
		}
		fmt.Println("rank 1 received", got)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 1 received [1 2 3]
}

// Every rank sends to its right neighbour and receives from its left one
// at once: issued one by one, every rank would block in its Send or Recv
// first; a batch runs them concurrently, so the ring cannot deadlock.
func ExampleBatch() {
	const n = 4
	got := make([]int64, n)
	err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
		right, left := (c.Rank()+1)%n, (c.Rank()+n-1)%n
		in := make([]int64, 1)
		err := c.NewBatch().
			Send(gocomms.FromSlice([]int64{int64(100 + c.Rank())}), right).
			Recv(gocomms.FromSlice(in), left).
			Issue(ctx)
		got[c.Rank()] = in[0]
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(got) // each rank holds its left neighbour's number
	// Output: [103 100 101 102]
}

// Rank 2 of four fails (it aborts, which closes its connections as a
// crash would) while the others all-reduce. They fail naming it, shrink
// to a communicator of the three survivors, ranked densely in their old
// order, and carry on there.
func ExampleComm_Shrink() {
	const dead = 2
	var mu sync.Mutex
	lines := map[int]string{}
	err := gocomms.RunLocal(context.Background(), 4, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == dead {
			c.Abort(errors.New("simulated crash"))
			return nil
		}
		err := c.AllReduce(ctx, gocomms.FromSlice([]int64{1}), gocomms.Sum)
		var oe *gocomms.OpError
		if !errors.Is(err, gocomms.ErrPeerFailed) || !errors.As(err, &oe) {
			return fmt.Errorf("all-reduce with rank %d gone: %v", dead, err)
		}
		s, err := c.Shrink(ctx)
		if err != nil {
			return err
		}
		defer s.Finalize(ctx)
		x := []int64{1}
		if err := s.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
			return err
		}
		mu.Lock()
		lines[c.Rank()] = fmt.Sprintf("rank %d: failed ranks %v; now rank %d of %d, sum %d", c.Rank(), oe.Ranks, s.Rank(), s.Size(), x[0])
		mu.Unlock()
		// The broken communicator reports its failed operation when finalized.
		c.Finalize(ctx)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	for r := range 4 {
		if l, ok := lines[r]; ok {
			fmt.Println(l)
		}
	}
	// Output:
	// rank 0: failed ranks [2]; now rank 0 of 3, sum 3
	// rank 1: failed ranks [2]; now rank 1 of 3, sum 3
	// rank 3: failed ranks [2]; now rank 2 of 3, sum 3
}

// Every error an operation returns is an *OpError: the communicator, the
// operation, its sequence number, the rank reporting, the ranks the
// failure concerns, and a cause matched with errors.Is. Here an argument
// no communicator of two accepts, and a timeout waiting for a rank that
// stays away from a barrier.
func Example_errors() {
	timedOut := make(chan struct{})
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			<-timedOut // alive, so rank 0 finds it absent rather than gone
			return nil
		}
		defer close(timedOut)
		err := c.Broadcast(ctx, gocomms.FromSlice([]float32{1}), 5) // root 5 of 2 ranks
		fmt.Println(err)
		fmt.Println("invalid argument:", errors.Is(err, gocomms.ErrInvalidArgument))

		err = c.Barrier(ctx, gocomms.OpTimeout(50*time.Millisecond))
		var oe *gocomms.OpError
		if errors.As(err, &oe) {
			fmt.Printf("comm %q, op %s #%d, rank %d, ranks %v, timeout: %v\n", oe.Comm, oe.Op, oe.Seq, oe.Rank, oe.Ranks, errors.Is(err, gocomms.ErrTimeout))
		}
		// Finalize reports the failed operations again; they were handled.
		c.Finalize(ctx)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// gocomms: comm "local" rank 0: broadcast #0: invalid argument: root 5 out of range [0,2)
	// invalid argument: true
	// comm "local", op barrier #0, rank 0, ranks [1], timeout: true
}
