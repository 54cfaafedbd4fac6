package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/transport"
)

// handleBoard collects the init handles of a round's members and hands
// every member the full list, as a store or a lighthouse would.
type handleBoard struct {
	mu      sync.Mutex
	handles []string
	full    chan struct{}
	want    int
}

func newHandleBoard(want int) *handleBoard {
	return &handleBoard{full: make(chan struct{}), want: want}
}

func (b *handleBoard) post(ctx context.Context, h string) ([]string, error) {
	b.mu.Lock()
	b.handles = append(b.handles, h)
	if len(b.handles) == b.want {
		close(b.full)
	}
	b.mu.Unlock()
	select {
	case <-b.full:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	hs := slices.Clone(b.handles)
	// Each member gets the handles in its own order: a set.
	rand.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
	return hs, nil
}

// checkSum all-reduces every rank's value and checks the sum.
func checkSum(ctx context.Context, c *gocomms.Comm, value func(rank int) int64) error {
	x := []int64{value(c.Rank())}
	if err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
		return err
	}
	var want int64
	for r := range c.Size() {
		want += value(r)
	}
	if x[0] != want {
		return fmt.Errorf("rank %d of %d: all-reduce = %d, want %d", c.Rank(), c.Size(), x[0], want)
	}
	return nil
}

// TestReconfigureGrowsBack has one of four ranks fail; the three
// survivors and a newcomer created with WithReconfigure exchange init
// handles and reconfigure, as a set, into a communicator of four in which
// the survivors keep their order and form the quorum and the newcomer
// grows in last. A second reconfigure, in a given order, reverses them.
func TestReconfigureGrowsBack(t *testing.T) {
	const n, dead = 4, 1
	net := transport.NewInproc()
	first, second := newHandleBoard(n), newHandleBoard(n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// grow runs a member from its communicator c on: both rounds, and
	// the all-reduces that check them. It returns the rank it had after
	// the first.
	grow := func(c *gocomms.Comm) (int, error) {
		h, err := c.InitHandle()
		if err != nil {
			return 0, err
		}
		if again, _ := c.InitHandle(); again != h {
			return 0, fmt.Errorf("init handle changed before reconfiguring: %q then %q", h, again)
		}
		hs, err := first.post(ctx, h)
		if err != nil {
			return 0, err
		}
		c1, err := c.Reconfigure(ctx, "round-1", gocomms.AnyOrder(hs...))
		if err != nil {
			return 0, fmt.Errorf("first reconfigure: %w", err)
		}
		if c1.Size() != n || !slices.Equal(c1.Quorum(), []int{0, 1, 2}) {
			return 0, fmt.Errorf("first reconfigure: size %d quorum %v, want %d and [0 1 2]", c1.Size(), c1.Quorum(), n)
		}
		if err := checkSum(ctx, c1, func(r int) int64 { return int64(10 + r) }); err != nil {
			return 0, err
		}
		h2, err := c1.InitHandle()
		if err != nil {
			return 0, err
		}
		hs2, err := second.post(ctx, fmt.Sprint(c1.Rank())+"="+h2)
		if err != nil {
			return 0, err
		}
		// Order the handles by rank, reversed.
		ordered := make([]string, n)
		for _, s := range hs2 {
			var r int
			var rest string
			fmt.Sscanf(s, "%d=%s", &r, &rest)
			ordered[n-1-r] = rest
		}
		c2, err := c1.Reconfigure(ctx, "round-2", gocomms.InOrder(ordered...))
		if err != nil {
			return 0, fmt.Errorf("second reconfigure: %w", err)
		}
		if c2.Rank() != n-1-c1.Rank() || !slices.Equal(c2.Quorum(), []int{0, 1, 2, 3}) {
			return 0, fmt.Errorf("second reconfigure: rank %d (was %d), quorum %v", c2.Rank(), c1.Rank(), c2.Quorum())
		}
		if err := checkSum(ctx, c2, func(r int) int64 { return int64(100 * r) }); err != nil {
			return 0, err
		}
		return c1.Rank(), errors.Join(c2.Finalize(ctx), c1.Finalize(ctx))
	}

	newcomer := make(chan error, 1)
	go func() {
		c, err := gocomms.NewComm(ctx, gocomms.NativeBackend, gocomms.CPU, "local", gocomms.WithReconfigure(), gocomms.WithNetwork(net))
		if err != nil {
			newcomer <- err
			return
		}
		if c.IsInitialized() || c.Size() != 0 {
			newcomer <- fmt.Errorf("a communicator to reconfigure has size %d before it is", c.Size())
			return
		}
		if err := c.AllReduce(ctx, gocomms.FromSlice([]int64{1}), gocomms.Sum); !errors.Is(err, gocomms.ErrNotInitialized) {
			newcomer <- fmt.Errorf("all-reduce before reconfigure: got %v, want ErrNotInitialized", err)
			return
		}
		rank, err := grow(c)
		if err == nil && rank != n-1 {
			err = fmt.Errorf("the newcomer got rank %d, want %d", rank, n-1)
		}
		newcomer <- errors.Join(err, c.Finalize(ctx))
	}()

	local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == dead {
			c.Abort(errors.New("simulated crash"))
			return nil
		}
		// Wait until the failure has reached this rank.
		if err := c.Barrier(ctx); !errors.Is(err, gocomms.ErrPeerFailed) && !errors.Is(err, gocomms.ErrAborted) {
			return fmt.Errorf("barrier with a rank gone: %v", err)
		}
		rank, err := grow(c)
		if err != nil {
			return err
		}
		want := c.Rank()
		if want > dead {
			want--
		}
		if rank != want {
			return fmt.Errorf("survivor %d got rank %d, want %d", c.Rank(), rank, want)
		}
		return finalizeExpectingFailures(ctx, c)
	}, gocomms.WithNetwork(net))
	if err := <-newcomer; err != nil {
		t.Fatal(err)
	}
}

// TestReconfigureRejectsBadMembers: malformed, duplicated and foreign
// handles, a missing id and a backend-less comm fail clearly, before
// anything connects.
func TestReconfigureRejectsBadMembers(t *testing.T) {
	ctx := context.Background()
	c, err := gocomms.NewComm(ctx, gocomms.NativeBackend, gocomms.CPU, "bad", gocomms.WithReconfigure(), gocomms.WithNetwork(transport.NewInproc()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Finalize(ctx)
	h, err := c.InitHandle()
	if err != nil {
		t.Fatal(err)
	}
	other := "gocomms1|-1||elsewhere"
	for name, tc := range map[string]struct {
		id      string
		members gocomms.Members
	}{
		"no id":          {"", gocomms.AnyOrder(h)},
		"no members":     {"x", gocomms.AnyOrder()},
		"malformed":      {"x", gocomms.AnyOrder(h, "nonsense")},
		"bad rank":       {"x", gocomms.InOrder(h, "gocomms1|7||elsewhere")},
		"twice":          {"x", gocomms.InOrder(h, h)},
		"without itself": {"x", gocomms.InOrder(other)},
	} {
		_, err := c.Reconfigure(ctx, tc.id, tc.members)
		if !errors.Is(err, gocomms.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, _, err := c.Agree(ctx, 1); !errors.Is(err, gocomms.ErrNotInitialized) {
		t.Errorf("agree before reconfigure: got %v, want ErrNotInitialized", err)
	}
	// A member alone makes a communicator of one.
	one, err := c.Reconfigure(ctx, "alone", gocomms.AnyOrder(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSum(ctx, one, func(int) int64 { return 7 }); err != nil {
		t.Error(err)
	}
	if err := one.Finalize(ctx); err != nil {
		t.Error(err)
	}
}
