package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport/tcp"
)

// windowNetworks are the transports the window tests run over: in-process
// queues, loopback TCP, and shared memory where the host has it.
func windowNetworks() map[string][]gocomms.Option {
	nets := map[string][]gocomms.Option{"inproc": nil, "tcp": {gocomms.WithNetwork(tcp.New())}}
	if nvl.Host() != "" {
		nets["shm"] = []gocomms.Option{gocomms.WithNetwork(nvl.New())}
	}
	return nets
}

// ringValue is what rank r puts at element i in iteration it.
func ringValue(r, it, i int) int { return (r*131 + it*17 + i) % 100 }

// TestWindowRing is torchcomms' WindowRmaTest: in a ring, each rank puts
// its block into the next rank's window at its own offset, signals it,
// waits for the previous rank's signal, and reads the block the previous
// rank put there through its own mapped window; ten iterations, over
// counts 4, 1,024 and a million, float32, int32 and int8, on every
// transport, for 1 to 4 ranks.
func TestWindowRing(t *testing.T) {
	counts := []int{4, 1024, 1 << 20}
	if testing.Short() {
		counts = counts[:2]
	}
	for name, opts := range windowNetworks() {
		for ranks := 1; ranks <= 4; ranks++ {
			for _, count := range counts {
				for _, dt := range []gocomms.DType{gocomms.Float32, gocomms.Int32, gocomms.Int8} {
					t.Run(fmt.Sprintf("%s/ranks=%d/count=%d/%v", name, ranks, count, dt), func(t *testing.T) {
						ringOnce(t, ranks, count, dt, opts)
					})
				}
			}
		}
	}
}

func ringOnce(t *testing.T, ranks, count int, dt gocomms.DType, opts []gocomms.Option) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := gocomms.RunLocal(ctx, ranks, func(ctx context.Context, c *gocomms.Comm) error {
		win, err := c.NewWindow(ctx, ranks*count*dt.Size())
		if err != nil {
			return err
		}
		next, prev := (c.Rank()+1)%ranks, (c.Rank()+ranks-1)%ranks
		own, err := win.MapRemote(c.Rank())
		if err != nil {
			return err
		}
		src, _ := gocomms.NewTensor(dt, count)
		for it := range 10 {
			for i := range count {
				setInt(src, i, ringValue(c.Rank(), it, i))
			}
			if err := win.Put(ctx, src, next, c.Rank()*count); err != nil {
				return err
			}
			if err := win.Notify(ctx, next); err != nil {
				return err
			}
			if err := win.WaitNotify(ctx, prev); err != nil {
				return err
			}
			block, _ := tensor.FromBytes(dt, own.Bytes()[prev*count*dt.Size():(prev+1)*count*dt.Size()], count)
			for i := range count {
				if got, want := getInt(block, i), ringValue(prev, it, i); got != want {
					return fmt.Errorf("iteration %d: rank %d element %d from rank %d is %d, want %d", it, c.Rank(), i, prev, got, want)
				}
			}
			// The next put overwrites what the next rank reads.
			if err := c.Barrier(ctx); err != nil {
				return err
			}
		}
		return win.Close(ctx)
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
}

func setInt(t *gocomms.Tensor, i, v int) {
	switch t.DType() {
	case gocomms.Float32:
		s, _ := gocomms.As[float32](t)
		s[i] = float32(v)
	case gocomms.Int32:
		s, _ := gocomms.As[int32](t)
		s[i] = int32(v)
	case gocomms.Int8:
		s, _ := gocomms.As[int8](t)
		s[i] = int8(v)
	default:
		panic(fmt.Sprintf("setInt: %v", t.DType()))
	}
}

func getInt(t *gocomms.Tensor, i int) int {
	switch t.DType() {
	case gocomms.Float32:
		s, _ := gocomms.As[float32](t)
		return int(s[i])
	case gocomms.Int32:
		s, _ := gocomms.As[int32](t)
		return int(s[i])
	case gocomms.Int8:
		s, _ := gocomms.As[int8](t)
		return int(s[i])
	}
	panic(fmt.Sprintf("getInt: %v", t.DType()))
}

// int64At returns the int64 at element i of b.
func int64At(b []byte, i int) int64 {
	t, _ := tensor.FromBytes(gocomms.Int64, b[8*i:8*i+8], 1)
	s, _ := gocomms.As[int64](t)
	return s[0]
}

// TestWindowFetchAndAddIsAtomic: every rank adds to one word of rank 0's
// window many times at once; the word ends at the sum, and the values
// fetched are each prefix sum exactly once, as a linearizable counter's.
func TestWindowFetchAndAddIsAtomic(t *testing.T) {
	const ranks, adds = 4, 200
	for name, opts := range windowNetworks() {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var fetched []int64
			err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
				win, err := c.NewWindow(ctx, 64)
				if err != nil {
					return err
				}
				one := gocomms.FromSlice([]int64{1})
				works := make([]*gocomms.Work, adds)
				results := make([]*gocomms.Tensor, adds)
				for i := range adds {
					results[i] = gocomms.FromSlice([]int64{-1})
					works[i] = win.FetchAndOpAsync(one, results[i], 0, 1, gocomms.Sum)
				}
				for i, w := range works {
					if err := w.Wait(ctx); err != nil {
						return err
					}
					mu.Lock()
					fetched = append(fetched, int64At(results[i].Bytes(), 0))
					mu.Unlock()
				}
				if err := win.Fence(ctx); err != nil {
					return err
				}
				if c.Rank() == 0 {
					if v := int64At(win.Tensor().Bytes(), 1); v != ranks*adds {
						return fmt.Errorf("the counter is %d, want %d", v, ranks*adds)
					}
				}
				return win.Close(ctx)
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(fetched)
			for i, v := range fetched {
				if v != int64(i) {
					t.Fatalf("fetched values %v...: %d at position %d", fetched[:min(len(fetched), 10)], v, i)
				}
			}
		})
	}
}

// TestWindowRejectsBadInput: every bad argument fails before anything
// moves, with ErrInvalidArgument, and the window stays usable.
func TestWindowRejectsBadInput(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		win, err := c.NewWindow(ctx, 64)
		if err != nil {
			return err
		}
		f32 := gocomms.FromSlice(make([]float32, 4))
		i64 := gocomms.FromSlice([]int64{1})
		bad := map[string]error{
			"put past the end":              win.Put(ctx, f32, 1, 13),
			"put at negative offset":        win.Put(ctx, f32, 1, -1),
			"put to rank out of range":      win.Put(ctx, f32, 2, 0),
			"get too large":                 win.Get(ctx, gocomms.FromSlice(make([]float32, 17)), 1, 0),
			"accumulate with avg":           win.Accumulate(ctx, f32, 1, 0, gocomms.Avg),
			"fetch of 4 bytes":              win.FetchAndOp(ctx, gocomms.FromSlice([]int32{1}), gocomms.FromSlice([]int32{0}), 1, 0, gocomms.Sum),
			"fetch result of another dtype": win.FetchAndOp(ctx, i64, gocomms.FromSlice([]float64{0}), 1, 0, gocomms.Sum),
			"swap past the end":             win.CompareAndSwap(ctx, i64, i64, gocomms.FromSlice([]int64{0}), 1, 8),
			"signal slot out of range":      win.Signal(ctx, 1, 2, gocomms.SignalAdd, 1),
			"signal op invalid":             win.Signal(ctx, 1, 0, 0, 1),
			"flush of rank out of range":    win.Flush(ctx, -1),
		}
		_, werr := win.WaitSignal(ctx, 5, gocomms.SignalGE, 1)
		bad["wait on slot out of range"] = werr
		_, werr = win.WaitSignal(ctx, 0, 0, 1)
		bad["wait with no comparison"] = werr
		for what, err := range bad {
			if !errors.Is(err, gocomms.ErrInvalidArgument) {
				return fmt.Errorf("%s: %v, want ErrInvalidArgument", what, err)
			}
		}
		// Still usable.
		if err := win.Put(ctx, f32, 1-c.Rank(), 12); err != nil {
			return err
		}
		if err := win.Close(ctx); err != nil {
			return err
		}
		if err := win.Put(ctx, f32, 1, 0); !errors.Is(err, gocomms.ErrWindowClosed) {
			return fmt.Errorf("put on a closed window: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowsAreSymmetric: ranks asking for windows of different sizes
// all fail, naming the mismatch.
func TestWindowsAreSymmetric(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		_, err := c.NewWindow(ctx, 64+c.Rank()/2*8)
		if !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("rank %d: %v, want ErrInvalidArgument", c.Rank(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowRevokedOnFailure: once a peer fails, the window fails what
// waits on it and every later operation, with an error naming that rank;
// nothing hangs.
func TestWindowRevokedOnFailure(t *testing.T) {
	for name, opts := range windowNetworks() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := gocomms.RunLocal(ctx, 3, func(ctx context.Context, c *gocomms.Comm) error {
				win, err := c.NewWindow(ctx, 64)
				if err != nil {
					return err
				}
				// Rank 2 goes once the others are past creating the window.
				if c.Rank() == 2 {
					for _, r := range []int{0, 1} {
						if err := win.WaitNotify(ctx, r); err != nil {
							return err
						}
					}
					c.Abort(errors.New("test: rank 2 goes away"))
					return nil
				}
				if err := win.Notify(ctx, 2); err != nil {
					return err
				}
				// The wait outlives the failure, or starts after it: it
				// fails with it either way.
				_, werr := win.WaitSignal(ctx, 0, gocomms.SignalGE, 1)
				if !errors.Is(werr, gocomms.ErrPeerFailed) {
					return fmt.Errorf("rank %d: a wait across the failure ended with %v", c.Rank(), werr)
				}
				var oe *gocomms.OpError
				if !errors.As(werr, &oe) || !strings.Contains(werr.Error(), "rank 2") {
					return fmt.Errorf("rank %d: %v does not name rank 2", c.Rank(), werr)
				}
				if err := win.Put(ctx, gocomms.FromSlice([]float32{1}), 1-c.Rank(), 0); !errors.Is(err, gocomms.ErrPeerFailed) {
					return fmt.Errorf("rank %d: a put after the failure: %v", c.Rank(), err)
				}
				return nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowWaitCancelled: a wait whose context ends returns its error,
// and the signal that comes later still counts for the next wait.
func TestWindowWaitCancelled(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		win, err := c.NewWindow(ctx, 8)
		if err != nil {
			return err
		}
		peer := 1 - c.Rank()
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if err := win.WaitNotify(short, peer); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("a wait with nothing coming: %v", err)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := win.Notify(ctx, peer); err != nil {
			return err
		}
		if err := win.WaitNotify(ctx, peer); err != nil {
			return err
		}
		v, err := win.ResetSignal(ctx, peer)
		if err != nil || v != 1 {
			return fmt.Errorf("reset returned %d, %v: want the one notification", v, err)
		}
		if v, err := win.ReadSignal(ctx, peer); err != nil || v != 0 {
			return fmt.Errorf("read after reset: %d, %v", v, err)
		}
		return win.Close(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowLargeTransfers: a put and a get as large as a link's whole
// window of unacknowledged bytes go through right after the small frames
// of the window's creation, which the peer has not acknowledged yet.
func TestWindowLargeTransfers(t *testing.T) {
	const size = 64 << 20
	for name, opts := range windowNetworks() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := gocomms.RunLocal(ctx, 2, func(ctx context.Context, c *gocomms.Comm) error {
				win, err := c.NewWindow(ctx, size)
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					src := make([]byte, size)
					for i := range src {
						src[i] = byte(i * 7)
					}
					if err := win.Put(ctx, gocomms.FromSlice(src), 1, 0); err != nil {
						return err
					}
					if err := win.Flush(ctx, 1); err != nil {
						return err
					}
					back := make([]byte, size)
					if err := win.Get(ctx, gocomms.FromSlice(back), 1, 0); err != nil {
						return err
					}
					if !slices.Equal(back, src) {
						return fmt.Errorf("got back what differs from what was put")
					}
				}
				return win.Close(ctx)
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowChunkedOperations: operations larger than a frame's chunk
// (window.ChunkBytes) and not a multiple of it, at an offset, on a peer's
// window and on this rank's own, give what a plain loop over the elements
// gives.
func TestWindowChunkedOperations(t *testing.T) {
	const elems = 2*window.ChunkBytes/8 + 3 // int64s: two chunks and a bit
	const offset = 5
	for name, opts := range windowNetworks() {
		t.Run(name, func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
				win, err := c.NewWindow(ctx, 8*(elems+offset+1))
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					for _, target := range []int{1, 0} {
						src, old, back := make([]int64, elems), make([]int64, elems), make([]int64, elems)
						for i := range src {
							src[i] = int64(i%1000 - 500)
						}
						if err := win.Put(ctx, gocomms.FromSlice(src), target, offset); err != nil {
							return err
						}
						if err := win.Accumulate(ctx, gocomms.FromSlice(src), target, offset, gocomms.Sum); err != nil {
							return err
						}
						if err := win.GetAccumulate(ctx, gocomms.FromSlice(src), gocomms.FromSlice(old), target, offset, gocomms.Max); err != nil {
							return err
						}
						if err := win.Get(ctx, gocomms.FromSlice(back), target, offset); err != nil {
							return err
						}
						for i, v := range src {
							if old[i] != 2*v || back[i] != max(2*v, v) {
								return fmt.Errorf("rank %d element %d: fetched %d and read %d, want %d and %d", target, i, old[i], back[i], 2*v, max(2*v, v))
							}
						}
					}
				}
				return win.Close(ctx)
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowLockExcludes: ranks that read, increment and write back a
// counter under rank 0's exclusive lock lose no increment, which they
// would without it; a lock given up by its timeout is withdrawn.
func TestWindowLockExcludes(t *testing.T) {
	const ranks, rounds = 4, 25
	for name, opts := range windowNetworks() {
		t.Run(name, func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
				win, err := c.NewWindow(ctx, 8)
				if err != nil {
					return err
				}
				v := gocomms.FromSlice([]int64{0})
				for range rounds {
					if err := win.Lock(ctx, 0, gocomms.LockExclusive); err != nil {
						return err
					}
					if err := win.Get(ctx, v, 0, 0); err != nil {
						return err
					}
					s, _ := gocomms.As[int64](v)
					s[0]++
					if err := win.Put(ctx, v, 0, 0); err != nil {
						return err
					}
					if err := win.Unlock(ctx, 0); err != nil {
						return err
					}
				}
				if err := win.Fence(ctx); err != nil {
					return err
				}
				if c.Rank() == 0 {
					if got := int64At(win.Tensor().Bytes(), 0); got != ranks*rounds {
						return fmt.Errorf("the counter is %d, want %d", got, ranks*rounds)
					}
				}
				// Rank 1 holds the lock; rank 2's wait for it times out and
				// is withdrawn, so it gets the lock once rank 1 lets go.
				if c.Rank() == 1 {
					if err := win.Lock(ctx, 0, gocomms.LockExclusive); err != nil {
						return err
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if c.Rank() == 2 {
					err := win.Lock(ctx, 0, gocomms.LockShared, gocomms.OpTimeout(30*time.Millisecond))
					if !errors.Is(err, gocomms.ErrTimeout) || !strings.Contains(err.Error(), "rank 0") {
						return fmt.Errorf("a lock held elsewhere: %v, want a timeout naming rank 0", err)
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if c.Rank() == 1 {
					if err := win.Unlock(ctx, 0); err != nil {
						return err
					}
				}
				if c.Rank() == 3 {
					if err := win.Lock(ctx, 0, gocomms.LockExclusive); err != nil {
						return err
					}
					if err := win.Unlock(ctx, 0); err != nil {
						return err
					}
				}
				return win.Close(ctx)
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowSurvivesShrink: after a rank fails, the survivors shrink the
// communicator and carry the window over; what every survivor put into
// every other's window before the failure is still there, and the window
// works again among them.
func TestWindowSurvivesShrink(t *testing.T) {
	const n, dead = 4, 2
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := gocomms.RunLocal(ctx, n, func(ctx context.Context, c *gocomms.Comm) error {
		win, err := c.NewWindow(ctx, 8*n)
		if err != nil {
			return err
		}
		// Every rank writes its number at its slot of every window.
		for r := range n {
			if err := win.Put(ctx, gocomms.FromSlice([]int64{int64(100 + c.Rank())}), r, c.Rank()); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx); err != nil {
			return err
		}
		// Rank 2 goes once the others have told it they are past the
		// fence.
		if c.Rank() == dead {
			for r := range n {
				if r != dead {
					if err := win.WaitNotify(ctx, r); err != nil {
						return err
					}
				}
			}
			c.Abort(errors.New("test: rank 2 goes away"))
			return nil
		}
		if err := win.Notify(ctx, dead); err != nil {
			return err
		}
		// The survivors find out, agree and shrink.
		err = c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
		if !errors.Is(err, gocomms.ErrPeerFailed) {
			return fmt.Errorf("all_reduce with a rank gone: %v", err)
		}
		if _, _, err := c.Agree(ctx, 0); err != nil {
			return err
		}
		s, err := c.Shrink(ctx)
		if err != nil {
			return err
		}
		sw, err := win.Shrink(ctx, s)
		if err != nil {
			return err
		}
		for r := range n {
			if got := int64At(sw.Tensor().Bytes(), r); got != int64(100+r) {
				return fmt.Errorf("after the shrink, slot %d holds %d, want %d", r, got, 100+r)
			}
		}
		// It works among the survivors, once all have looked: each adds
		// one to every survivor's first word.
		if err := s.Barrier(ctx); err != nil {
			return err
		}
		for r := range s.Size() {
			if err := sw.Accumulate(ctx, gocomms.FromSlice([]int64{1}), r, 0, gocomms.Sum); err != nil {
				return err
			}
		}
		if err := sw.Fence(ctx); err != nil {
			return err
		}
		if got := int64At(sw.Tensor().Bytes(), 0); got != 100+int64(s.Size()) {
			return fmt.Errorf("after the survivors' adds the first word is %d, want %d", got, 100+s.Size())
		}
		if err := sw.Close(ctx); err != nil {
			return err
		}
		if err := s.Finalize(ctx); err != nil {
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowAfterFinalize: a window whose communicator finalized fails
// every call at once, and closing it too, rather than waiting on an
// actor that stopped with its rank.
func TestWindowAfterFinalize(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		win, err := c.NewWindow(ctx, 8)
		if err != nil {
			return err
		}
		if err := c.Finalize(ctx); err != nil {
			return err
		}
		if err := win.Put(ctx, gocomms.FromSlice([]int64{1}), 1-c.Rank(), 0); !errors.Is(err, gocomms.ErrFinalized) {
			return fmt.Errorf("a put after finalize: %v", err)
		}
		if _, err := win.WaitSignal(ctx, 0, gocomms.SignalGE, 1); !errors.Is(err, gocomms.ErrFinalized) {
			return fmt.Errorf("a wait after finalize: %v", err)
		}
		if err := win.Close(ctx); !errors.Is(err, gocomms.ErrFinalized) {
			return fmt.Errorf("close after finalize: %v", err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, gocomms.ErrFinalized) {
		t.Fatal(err)
	}
}

// TestWindowAccess: a rank reaches its own window and those of ranks in
// this process directly, whatever the network; MapRemote gives their
// memory, which shows what their puts left there.
func TestWindowAccess(t *testing.T) {
	for name, opts := range windowNetworks() {
		t.Run(name, func(t *testing.T) {
			err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
				win, err := c.NewWindow(ctx, 8*3)
				if err != nil {
					return err
				}
				next := (c.Rank() + 1) % 3
				if err := win.PutSignal(ctx, gocomms.FromSlice([]int64{int64(10 + c.Rank())}), next, c.Rank(), c.Rank(), gocomms.SignalAdd, 1); err != nil {
					return err
				}
				prev := (c.Rank() + 2) % 3
				if _, err := win.WaitSignal(ctx, prev, gocomms.SignalGE, 1); err != nil {
					return err
				}
				for r := range 3 {
					if a := win.Access(r); a != gocomms.AccessUnified {
						return fmt.Errorf("access to rank %d is %v", r, a)
					}
				}
				own, err := win.MapRemote(c.Rank())
				if err != nil {
					return err
				}
				if got := int64At(own.Bytes(), prev); got != int64(10+prev) {
					return fmt.Errorf("rank %d holds %d from rank %d, want %d", c.Rank(), got, prev, 10+prev)
				}
				return win.Close(ctx)
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowAsyncForms: NewWindowAsync reports a window that works, or,
// when the ranks' sizes differ, ErrInvalidArgument on every rank; a
// WaitSignalAsync that is given up ends with its cause, and one that is
// satisfied with the slot's value.
func TestWindowAsyncForms(t *testing.T) {
	type made struct {
		w   *gocomms.Window
		err error
	}
	open := func(c *gocomms.Comm, size int) made {
		ch := make(chan made, 1)
		c.NewWindowAsync(size, func(w *gocomms.Window, err error) { ch <- made{w, err} })
		return <-ch
	}
	type waited struct {
		v   uint64
		err error
	}
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		if m := open(c, 64+c.Rank()/2*8); !errors.Is(m.err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("rank %d: sizes that differ: %v, want ErrInvalidArgument", c.Rank(), m.err)
		}
		m := open(c, 8)
		if m.err != nil {
			return m.err
		}
		win := m.w
		given := make(chan waited, 1)
		cancel := win.WaitSignalAsync(0, gocomms.SignalGE, 1<<40, func(v uint64, err error) { given <- waited{v, err} })
		cause := errors.New("given up")
		cancel(cause)
		if g := <-given; !errors.Is(g.err, cause) {
			return fmt.Errorf("a wait given up: %v, want its cause", g.err)
		}
		got := make(chan waited, 1)
		win.WaitSignalAsync(0, gocomms.SignalGE, 2, func(v uint64, err error) { got <- waited{v, err} })
		if err := win.Signal(ctx, (c.Rank()+1)%3, 0, gocomms.SignalAdd, 2); err != nil {
			return err
		}
		if g := <-got; g.err != nil || g.v != 2 {
			return fmt.Errorf("a wait for the signal of 2: %d, %v", g.v, g.err)
		}
		return win.Close(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}
