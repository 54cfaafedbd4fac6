package metrics

import (
	"context"
	"time"

	"github.com/gocomms/gocomms/store"
)

// Store returns s with each call timed into store_round_trip_seconds and
// its failures counted in store_errors_total, by method.
func (m *Metrics) Store(s store.Store) store.Store {
	if ms, ok := s.(*meteredStore); ok && ms.m == m {
		return s // a split or a retry passing the same store again
	}
	return &meteredStore{s: s, m: m}
}

type meteredStore struct {
	s store.Store
	m *Metrics
}

// done records one call of method op that began at start.
func (s *meteredStore) done(op string, start time.Time, err error) {
	s.m.storeOps.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.storeErrs.WithLabelValues(op).Inc()
	}
}

func (s *meteredStore) Set(ctx context.Context, key string, value []byte) error {
	start := time.Now()
	err := s.s.Set(ctx, key, value)
	s.done("set", start, err)
	return err
}

func (s *meteredStore) Get(ctx context.Context, key string) ([]byte, error) {
	start := time.Now()
	v, err := s.s.Get(ctx, key)
	s.done("get", start, err)
	return v, err
}

func (s *meteredStore) Add(ctx context.Context, key string, delta int64) (int64, error) {
	start := time.Now()
	v, err := s.s.Add(ctx, key, delta)
	s.done("add", start, err)
	return v, err
}

func (s *meteredStore) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	start := time.Now()
	v, err := s.s.CompareSet(ctx, key, expected, desired)
	s.done("compare_set", start, err)
	return v, err
}

func (s *meteredStore) Delete(ctx context.Context, key string) (bool, error) {
	start := time.Now()
	ok, err := s.s.Delete(ctx, key)
	s.done("delete", start, err)
	return ok, err
}

func (s *meteredStore) Check(ctx context.Context, keys ...string) (bool, error) {
	start := time.Now()
	ok, err := s.s.Check(ctx, keys...)
	s.done("check", start, err)
	return ok, err
}

func (s *meteredStore) Wait(ctx context.Context, keys ...string) error {
	start := time.Now()
	err := s.s.Wait(ctx, keys...)
	s.done("wait", start, err)
	return err
}

func (s *meteredStore) NumKeys(ctx context.Context) (int64, error) {
	start := time.Now()
	n, err := s.s.NumKeys(ctx)
	s.done("num_keys", start, err)
	return n, err
}

func (s *meteredStore) Append(ctx context.Context, key string, value []byte) error {
	start := time.Now()
	err := s.s.Append(ctx, key, value)
	s.done("append", start, err)
	return err
}

func (s *meteredStore) MultiGet(ctx context.Context, keys ...string) ([][]byte, error) {
	start := time.Now()
	v, err := s.s.MultiGet(ctx, keys...)
	s.done("multi_get", start, err)
	return v, err
}

func (s *meteredStore) MultiSet(ctx context.Context, keys []string, values [][]byte) error {
	start := time.Now()
	err := s.s.MultiSet(ctx, keys, values)
	s.done("multi_set", start, err)
	return err
}

// Close closes the store it wraps; closing is no round trip.
func (s *meteredStore) Close() error { return s.s.Close() }
