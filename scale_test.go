package gocomms_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport/tcp"
)

// countingStore counts the requests a store serves and the bytes of the
// values that cross it, both ways.
type countingStore struct {
	store.Store
	requests, bytes atomic.Int64
}

func (s *countingStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	s.requests.Add(1)
	return s.Store.Add(ctx, key, delta)
}

func (s *countingStore) Set(ctx context.Context, key string, value []byte) error {
	s.requests.Add(1)
	s.bytes.Add(int64(len(value)))
	return s.Store.Set(ctx, key, value)
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.requests.Add(1)
	v, err := s.Store.Get(ctx, key)
	s.bytes.Add(int64(len(v)))
	return v, err
}

func (s *countingStore) Wait(ctx context.Context, keys ...string) error {
	s.requests.Add(1)
	return s.Store.Wait(ctx, keys...)
}

func (s *countingStore) Check(ctx context.Context, keys ...string) (bool, error) {
	s.requests.Add(1)
	return s.Store.Check(ctx, keys...)
}

func (s *countingStore) MultiGet(ctx context.Context, keys ...string) ([][]byte, error) {
	s.requests.Add(1)
	vs, err := s.Store.MultiGet(ctx, keys...)
	for _, v := range vs {
		s.bytes.Add(int64(len(v)))
	}
	return vs, err
}

// TestThousandRanksOverTCP starts 1,024 ranks in one process over real TCP
// and all-reduces once. Starting them costs the store O(ranks) requests
// and bytes, and ranks connect only to the peers the all-reduce needs.
func TestThousandRanksOverTCP(t *testing.T) {
	n := 1024
	if testing.Short() {
		n = 128
	}
	st := &countingStore{Store: store.NewMemory()}
	nw := &countingNetwork{Network: tcp.New()}
	var joined, done atomic.Int64
	start := time.Now()
	err := gocomms.RunLocal(t.Context(), n, func(ctx context.Context, c *gocomms.Comm) error {
		took := time.Since(start)
		if c.Rank() == 0 {
			joined.Store(int64(took))
		}
		x := []int64{int64(c.Rank()), 1}
		if err := c.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
			return err
		}
		if want := int64(n * (n - 1) / 2); x[0] != want || x[1] != int64(n) {
			return fmt.Errorf("rank %d: all-reduce gave %v, want [%d %d]", c.Rank(), x, want, n)
		}
		done.Add(1)
		return nil
	}, gocomms.WithStore(st), gocomms.WithNetwork(nw), gocomms.WithTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	requests, bytes, dials := st.requests.Load(), st.bytes.Load(), nw.dials.Load()
	t.Logf("%d ranks: rank 0 joined after %v, all-reduce done after %v; store: %d requests, %d bytes; %d dials",
		n, time.Duration(joined.Load()), time.Since(start), requests, bytes, dials)
	// Each rank adds to the generation counter, sets its address and reads
	// the roster; rank 0 waits for all; each connection reads one address.
	if limit := 3*int64(n) + 2*dials + 8; requests > limit {
		t.Errorf("the store served %d requests for %d ranks and %d dials, over %d", requests, n, dials, limit)
	}
	if limit := 64*int64(n) + 64*dials; bytes > limit {
		t.Errorf("%d bytes crossed the store for %d ranks and %d dials, over %d", bytes, n, dials, limit)
	}
	// Recursive doubling needs log2(n) peers per rank, a ring two; a dial
	// that lost a tie-break to the peer's counts too.
	if limit := int64(2 * n * 11); dials > limit {
		t.Errorf("%d dials for %d ranks, over %d: ranks connect to more than the peers they talk to", dials, n, limit)
	}
}
