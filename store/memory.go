package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
)

// Memory is an in-memory Store, safe for concurrent use. Waits are woken by
// the write that creates the key, never by polling. The zero value is ready
// to use.
//
// Where PyTorch's servers differ, Memory follows the libuv server: a
// CompareSet that creates a key wakes its waiters.
type Memory struct {
	mu      sync.Mutex
	closed  bool
	data    map[string][]byte
	waiters map[string]*waiter // keys someone waits for, all missing
	done    chan struct{}      // closed by Close
}

// waiter is a key's wake-up channel, closed when the key is created, and
// the number of calls waiting on it, so it can be dropped when they all
// give up.
type waiter struct {
	ch chan struct{}
	n  int
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{}
}

// open checks that m is usable and initialises a zero Memory. Called with
// m.mu held.
func (m *Memory) open(op string) error {
	if m.closed {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	if m.data == nil {
		m.data = make(map[string][]byte)
		m.waiters = make(map[string]*waiter)
		m.done = make(chan struct{})
	}
	return nil
}

// put stores v, which m now owns, and wakes the key's waiters. Called with
// m.mu held.
func (m *Memory) put(key string, v []byte) {
	m.data[key] = v
	if w := m.waiters[key]; w != nil {
		close(w.ch)
		delete(m.waiters, key)
	}
}

// missing returns the keys that do not exist. Called with m.mu held.
func (m *Memory) missing(keys []string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := m.data[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// await waits until all keys exist and then calls found with m.mu held.
func (m *Memory) await(ctx context.Context, op string, keys []string, found func()) error {
	if err := checkKeys(op, keys...); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if err := m.open(op); err != nil {
			return err
		}
		missing := m.missing(keys)
		if len(missing) == 0 {
			found()
			return nil
		}
		// Waiting for the first missing key is enough: the loop re-checks
		// them all when it is set.
		w := m.waiters[missing[0]]
		if w == nil {
			w = &waiter{ch: make(chan struct{})}
			m.waiters[missing[0]] = w
		}
		w.n++
		done := m.done
		m.mu.Unlock()
		var err error
		select {
		case <-w.ch:
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		m.mu.Lock()
		if w.n--; w.n == 0 && m.waiters[missing[0]] == w {
			delete(m.waiters, missing[0])
		}
		if missing := m.missing(keys); err != nil && len(missing) > 0 {
			return fmt.Errorf("store: %s: waiting for %s: %w", op, quoteKeys(missing), err)
		}
	}
}

// quoteKeys names keys in an error message.
func quoteKeys(keys []string) string {
	if len(keys) == 1 {
		return "key " + strconv.Quote(keys[0])
	}
	return fmt.Sprintf("keys %q", keys)
}

func (m *Memory) Set(ctx context.Context, key string, value []byte) error {
	if err := checkKeys("set", key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("set"); err != nil {
		return err
	}
	m.put(key, clone(value))
	return nil
}

func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := m.await(ctx, "get", []string{key}, func() { v = clone(m.data[key]) })
	return v, err
}

func (m *Memory) Add(ctx context.Context, key string, delta int64) (int64, error) {
	if err := checkKeys("add", key); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("add"); err != nil {
		return 0, err
	}
	var n int64
	if cur, ok := m.data[key]; ok {
		var err error
		if n, err = parseCounter(cur); err != nil {
			return 0, fmt.Errorf("store: add %q: value %q: %w", key, cur, err)
		}
	}
	sum, ok := addInt64(n, delta)
	if !ok {
		return 0, fmt.Errorf("store: add %q: %d%+d: %w", key, n, delta, errOutOfRange)
	}
	m.put(key, strconv.AppendInt(nil, sum, 10))
	return sum, nil
}

func (m *Memory) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	if err := checkKeys("compare-set", key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("compare-set"); err != nil {
		return nil, err
	}
	cur, ok := m.data[key]
	switch {
	case !ok && len(expected) > 0:
		return clone(expected), nil
	case ok && !bytes.Equal(cur, expected):
		return clone(cur), nil
	}
	m.put(key, clone(desired))
	return clone(desired), nil
}

func (m *Memory) Delete(ctx context.Context, key string) (bool, error) {
	if err := checkKeys("delete", key); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("delete"); err != nil {
		return false, err
	}
	_, ok := m.data[key]
	delete(m.data, key)
	return ok, nil
}

func (m *Memory) Check(ctx context.Context, keys ...string) (bool, error) {
	if err := checkKeys("check", keys...); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("check"); err != nil {
		return false, err
	}
	return len(m.missing(keys)) == 0, nil
}

func (m *Memory) Wait(ctx context.Context, keys ...string) error {
	return m.await(ctx, "wait", keys, func() {})
}

func (m *Memory) NumKeys(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("num-keys"); err != nil {
		return 0, err
	}
	return int64(len(m.data)), nil
}

func (m *Memory) Append(ctx context.Context, key string, value []byte) error {
	if err := checkKeys("append", key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("append"); err != nil {
		return err
	}
	// Appending in place is safe: stored values never escape uncopied.
	m.put(key, append(m.data[key], value...))
	return nil
}

func (m *Memory) MultiGet(ctx context.Context, keys ...string) ([][]byte, error) {
	var vs [][]byte
	err := m.await(ctx, "multi-get", keys, func() {
		vs = make([][]byte, len(keys))
		for i, k := range keys {
			vs[i] = clone(m.data[k])
		}
	})
	return vs, err
}

func (m *Memory) MultiSet(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("store: multi-set: %d keys but %d values", len(keys), len(values))
	}
	if err := checkKeys("multi-set", keys...); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("multi-set"); err != nil {
		return err
	}
	for i, k := range keys {
		m.put(k, clone(values[i]))
	}
	return nil
}

// Close drops the contents and releases every waiting call with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if err := m.open("close"); err != nil {
		return err
	}
	m.closed = true
	close(m.done)
	m.data = nil
	return nil
}
