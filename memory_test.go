package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/tensor"
)

// registeredSends counts the sends c's backend made as descriptors of
// registered memory.
func registeredSends(c *gocomms.Comm) uint64 {
	r, ok := c.UnsafeBackend().(interface{ RegisteredSends() uint64 })
	if !ok {
		return 0
	}
	return r.RegisteredSends()
}

// TestRegisteredCollectives runs collectives on tensors from Alloc over
// shared memory, where peers read them in place, and checks the results
// against the reference, on 2 to 4 ranks, at sizes below and above the
// smallest send that goes as a descriptor, and float32 and int64.
func TestRegisteredCollectives(t *testing.T) {
	if runtime.GOOS != "linux" || nvl.Host() == "" {
		t.Skip("no shared memory between processes here")
	}
	for _, n := range []int{2, 3, 4} {
		for _, count := range []int{0, 1, 1000, 1 << 14, 1 << 16, 3<<16 + 7} {
			t.Run(fmt.Sprintf("ranks=%d/count=%d", n, count), func(t *testing.T) {
				err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
					x, err := c.Alloc(tensor.Float32, count)
					if err != nil {
						return err
					}
					defer c.Free(x)
					y, err := c.Alloc(tensor.Int64, count)
					if err != nil {
						return err
					}
					defer c.Free(y)
					for i := range 3 {
						for j := range count {
							x.SetFloat64(j, float64((c.Rank()+1)*(j%7+i)))
							y.SetInt64(j, int64(c.Rank()*1000+j))
						}
						if err := c.AllReduce(ctx, x, gocomms.Sum); err != nil {
							return err
						}
						if err := c.Broadcast(ctx, y, i%n); err != nil {
							return err
						}
						for j := range count {
							if got, want := x.Float64At(j), float64(n*(n+1)/2*(j%7+i)); got != want {
								return fmt.Errorf("rank %d, all-reduce %d, element %d: %v, want %v", c.Rank(), i, j, got, want)
							}
							if got, want := y.Int64At(j), int64(i%n*1000+j); got != want {
								return fmt.Errorf("rank %d, broadcast %d, element %d: %d, want %d", c.Rank(), i, j, got, want)
							}
						}
					}
					if count >= 1<<16 && n == 2 && registeredSends(c) == 0 {
						return errors.New("no send went as a descriptor of registered memory")
					}
					return nil
				}, gocomms.WithNetwork(nvl.New()))
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestAllocRefusesWhatItCannot checks Alloc's and Free's errors: a bad
// shape, a tensor Alloc did not return, a double Free.
func TestAllocRefusesWhatItCannot(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		if _, err := c.Alloc(tensor.Float32, -1); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("a negative dimension gave %v", err)
		}
		x, err := c.Alloc(tensor.Float32, 16)
		if err != nil {
			return err
		}
		other, _ := tensor.New(tensor.Float32, 16)
		if err := c.Free(other); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("freeing a tensor Alloc did not return gave %v", err)
		}
		if err := c.Free(x); err != nil {
			return err
		}
		if err := c.Free(x); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("a second Free gave %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
