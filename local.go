package gocomms

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// RunLocal runs n ranks of a communicator named "local" in this process,
// over the in-process transport and an in-memory store unless opts name
// others (WithNetwork, WithStore), calling fn on each rank in its own
// goroutine, and finalizes every communicator when fn returns. If fn fails
// on one rank, the others' communicators are aborted so that nothing waits
// for it. It returns every rank's error, joined.
//
// This is the embedded default: examples, tests and `commnode demo` use it.
func RunLocal(ctx context.Context, n int, fn func(ctx context.Context, c *Comm) error, opts ...Option) error {
	return RunLocalOn(ctx, n, CPU, fn, opts...)
}

// RunLocalOn is RunLocal with the communicator's tensors on device: the
// ranks of CUDA(i) share that GPU.
func RunLocalOn(ctx context.Context, n int, device Device, fn func(ctx context.Context, c *Comm) error, opts ...Option) error {
	if n < 1 {
		return commerr.Invalid("RunLocal needs at least one rank, got %d", n)
	}
	probe, err := resolve("local", CPU, append([]Option{WithRank(0), WithSize(n)}, opts...))
	if err != nil {
		return err
	}
	rt := runtimeOf(&probe.cfg)
	if rt == nil {
		rt = actors.NewRuntime(probe.logger)
		defer rt.Shutdown()
	}
	defaults := []Option{WithStore(store.NewMemory()), WithNetwork(transport.NewInproc())}

	comms := make([]*Comm, n)
	var mu sync.Mutex
	failed := false
	abortOthers := func(rank int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return
		}
		failed = true
		for r, c := range comms {
			if c != nil && r != rank {
				c.Abort(fmt.Errorf("rank %d failed: %w", rank, err))
			}
		}
	}

	errs := make([]error, n)
	// Every rank finalizes once every fn has returned: a rank that finalized
	// while a peer still ran could leave the peer short of its last frames.
	var returned sync.WaitGroup
	returned.Add(n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			all := append(append(append([]Option{}, defaults...), opts...), WithRuntime(rt), WithRank(r), WithSize(n))
			c, err := NewComm(ctx, NativeBackend, device, "local", all...)
			if err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
				abortOthers(r, err)
				returned.Done()
				return
			}
			mu.Lock()
			comms[r] = c
			if failed {
				c.Abort(errors.New("another rank failed"))
			}
			mu.Unlock()
			err = fn(ctx, c)
			if err != nil {
				abortOthers(r, err)
			}
			returned.Done()
			returned.Wait()
			// fn may have finalized c itself.
			if ferr := c.Finalize(context.WithoutCancel(ctx)); err == nil && ferr != nil && !c.IsAborted() && !errors.Is(ferr, ErrFinalized) {
				err = ferr
			}
			if err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
