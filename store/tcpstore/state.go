package tcpstore

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/gocomms/gocomms/store"
)

// state is what a Server serves: a store.Memory for keys, values and
// counters, and what the wire protocol adds on top, which Memory's
// per-call waits cannot express: WAIT and BARRIER registrations that
// belong to a connection, end with CANCEL_WAIT or disconnect, and are
// released by counting keys as they appear; and queues. One mutex
// serialises every query, as PyTorch's servers do, so that a WAIT's check
// and its registration cannot miss a write. Registrations exist only for
// keys that were missing and not written since, which every write wakes.
type state struct {
	mu       sync.Mutex
	mem      *store.Memory
	waits    map[string][]*registration // by missing key
	barriers map[string][]*registration // by barrier key
	queues   map[string][][]byte
	live     map[waker]map[*registration]struct{} // by connection, for CANCEL_WAIT
}

// waker is a connection that a registration releases with a STOP_WAITING
// byte. release is called with state.mu held and must not block.
type waker interface{ release() }

// registration is one WAIT or BARRIER call waiting for keys.
type registration struct {
	w       waker
	keys    []string // distinct keys it was registered on
	missing int      // of keys, those not yet written; released at 0
	barrier bool     // in barriers rather than waits
}

// bg is the context of Memory calls, which never wait here.
var bg = context.Background()

func newState() *state {
	return &state{
		mem:      store.NewMemory(),
		waits:    make(map[string][]*registration),
		barriers: make(map[string][]*registration),
		queues:   make(map[string][][]byte),
		live:     make(map[waker]map[*registration]struct{}),
	}
}

func (s *state) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.Close()
}

// exists reports whether key is set, or names a non-empty queue as the libuv
// server counts it.
func (s *state) exists(key string) (bool, error) {
	ok, err := s.mem.Check(bg, key)
	return ok || len(s.queues[key]) > 0, err
}

// wake counts key as written for every registration waiting on it.
func (s *state) wake(key string) {
	for _, r := range s.waits[key] {
		s.progress(r)
	}
	delete(s.waits, key)
}

// progress counts one more of r's keys as written.
func (s *state) progress(r *registration) {
	if r.missing--; r.missing > 0 {
		return
	}
	delete(s.live[r.w], r)
	if len(s.live[r.w]) == 0 {
		delete(s.live, r.w)
	}
	r.w.release()
}

// register makes r wait on its keys in table.
func (s *state) register(table map[string][]*registration, r *registration) {
	for _, k := range r.keys {
		table[k] = append(table[k], r)
	}
	if s.live[r.w] == nil {
		s.live[r.w] = make(map[*registration]struct{})
	}
	s.live[r.w][r] = struct{}{}
}

func (s *state) set(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.mem.Set(bg, key, value); err != nil {
		return err
	}
	s.wake(key)
	return nil
}

// get returns key's value, or an empty one if it is missing, as the libuv
// server does.
func (s *state) get(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getLocked(key)
}

func (s *state) getLocked(key string) ([]byte, error) {
	if ok, err := s.mem.Check(bg, key); !ok || err != nil {
		return nil, err
	}
	return s.mem.Get(bg, key) // present, so it does not wait
}

func (s *state) multiGet(keys []string) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	values := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := s.getLocked(k)
		if err != nil {
			return nil, err
		}
		values[i] = v
	}
	return values, nil
}

func (s *state) add(key string, delta int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.mem.Add(bg, key, delta)
	if err != nil {
		return 0, err
	}
	s.wake(key)
	return n, nil
}

// compareSet wakes waiters when it creates the key, as the libuv server
// and Memory do (1.13 does not).
func (s *state) compareSet(key string, expected, desired []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.mem.CompareSet(bg, key, expected, desired)
	if err != nil {
		return nil, err
	}
	if ok, _ := s.mem.Check(bg, key); ok {
		s.wake(key)
	}
	return v, nil
}

func (s *state) check(keys []string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := true
	for _, k := range keys {
		ok, err := s.exists(k)
		if err != nil {
			return false, err
		}
		all = all && ok
	}
	return all, nil
}

// wait reports whether all keys exist, and otherwise registers w to be
// released once each missing key has been written.
func (s *state) wait(w waker, keys []string) (now bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for _, k := range keys {
		ok, err := s.exists(k)
		if err != nil {
			return false, err
		}
		if !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return true, nil
	}
	// A key listed twice is one key to wait for.
	slices.Sort(missing)
	missing = slices.Compact(missing)
	s.register(s.waits, &registration{w: w, keys: missing, missing: len(missing)})
	return false, nil
}

// cancel drops every registration of w, as CANCEL_WAIT and disconnecting
// do. Releases already given stay given.
func (s *state) cancel(w waker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.live[w] {
		table := s.waits
		if r.barrier {
			table = s.barriers
		}
		for _, k := range r.keys {
			rest := slices.DeleteFunc(table[k], func(x *registration) bool { return x == r })
			if len(rest) == 0 {
				delete(table, k)
			} else {
				table[k] = rest
			}
		}
	}
	delete(s.live, w)
}

func (s *state) numKeys() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem.NumKeys(bg)
}

// deleteKey leaves waiters alone, as PyTorch does.
func (s *state) deleteKey(key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem.Delete(bg, key)
}

func (s *state) append(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.mem.Append(bg, key, value); err != nil {
		return err
	}
	s.wake(key)
	return nil
}

func (s *state) multiSet(keys []string, values [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.mem.MultiSet(bg, keys, values); err != nil {
		return err
	}
	for _, k := range keys {
		s.wake(k)
	}
	return nil
}

func (s *state) listKeys() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem.Keys(bg)
}

// barrier counts w in at key. It reports whether the count has reached
// worldSize, releasing those who came earlier, and otherwise registers w.
func (s *state) barrier(w waker, key string, worldSize int64) (now bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.mem.Add(bg, key, 1)
	if err != nil {
		return false, err
	}
	s.wake(key)
	if n < worldSize {
		s.register(s.barriers, &registration{w: w, keys: []string{key}, missing: 1, barrier: true})
		return false, nil
	}
	for _, r := range s.barriers[key] {
		s.progress(r)
	}
	delete(s.barriers, key)
	return true, nil
}

// Queues live apart from the keys; a push releases one waiter on its name.

func (s *state) queuePush(key string, value []byte) error {
	if key == "" {
		return fmt.Errorf("queue-push: %w", store.ErrEmptyKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[key] = append(s.queues[key], value)
	if rs := s.waits[key]; len(rs) > 0 {
		if len(rs) == 1 {
			delete(s.waits, key)
		} else {
			s.waits[key] = rs[1:]
		}
		s.progress(rs[0])
	}
	return nil
}

// queuePop returns the queue's length before the pop, and its head if that
// is not zero.
func (s *state) queuePop(key string) (n int64, head []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[key]
	if len(q) == 0 {
		return 0, nil
	}
	head = q[0]
	q[0] = nil // the queue's array must not keep it alive
	if len(q) == 1 {
		delete(s.queues, key)
	} else {
		s.queues[key] = q[1:]
	}
	return int64(len(q)), head
}

func (s *state) queueLen(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.queues[key]))
}
