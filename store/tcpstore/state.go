package tcpstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
	limits   Limits
	mem      *store.Memory
	sizes    map[string]int             // len(key)+len(value) of each key in mem
	stored   int                        // bytes of keys, values, queued values and waited keys
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

func newState(limits Limits) *state {
	return &state{
		limits:   limits,
		mem:      store.NewMemory(),
		sizes:    make(map[string]int),
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

// fits checks that key holding size bytes of key and value would keep the
// store within its limits. Sizes are worked out before a write, from
// lengths, so that nothing is stored to be refused.
func (s *state) fits(key string, size int) error {
	old, had := s.sizes[key]
	if !had && len(s.sizes)+len(s.queues) >= s.limits.MaxStoredKeys {
		return overLimit("keys stored", len(s.sizes)+len(s.queues)+1, "MaxStoredKeys", s.limits.MaxStoredKeys)
	}
	return s.fitsBytes(size - old)
}

// fitsBytes checks that growing the store by n bytes keeps it within
// MaxStoredBytes.
func (s *state) fitsBytes(n int) error {
	if s.stored+n > s.limits.MaxStoredBytes {
		return overLimit("bytes stored", s.stored+n, "MaxStoredBytes", s.limits.MaxStoredBytes)
	}
	return nil
}

// account records that key now holds size bytes of key and value.
func (s *state) account(key string, size int) {
	s.stored += size - s.sizes[key]
	s.sizes[key] = size
}

// fitsReply checks that a reply of n bytes is within MaxResponse.
func (s *state) fitsReply(what string, n int) error {
	if n > s.limits.MaxResponse {
		return overLimit(what+" reply", n, "MaxResponse", s.limits.MaxResponse)
	}
	return nil
}

// valueLen is the length of key's value, 0 if it is missing.
func (s *state) valueLen(key string) int {
	if size, ok := s.sizes[key]; ok {
		return size - len(key)
	}
	return 0
}

// counterSize bounds the size of a key holding a decimal int64.
func counterSize(key string) int { return len(key) + len("-9223372036854775808") }

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
	s.stored -= r.cost()
	delete(s.live[r.w], r)
	if len(s.live[r.w]) == 0 {
		delete(s.live, r.w)
	}
	r.w.release()
}

// cost is the bytes of keys r holds, which count as stored: a peer must
// not hold more memory in waits than it could in keys.
func (r *registration) cost() int {
	n := 0
	for _, k := range r.keys {
		n += len(k)
	}
	return n
}

// roomToWait checks that w may register a wait holding cost bytes of keys.
func (s *state) roomToWait(w waker, cost int) error {
	if n := len(s.live[w]); n >= s.limits.MaxWaits {
		return overLimit("outstanding waits", n+1, "MaxWaits", s.limits.MaxWaits)
	}
	return s.fitsBytes(cost)
}

// register makes r wait on its keys in table, if the store has room for
// them and r's connection may wait once more.
func (s *state) register(table map[string][]*registration, r *registration) error {
	if err := s.roomToWait(r.w, r.cost()); err != nil {
		return err
	}
	s.stored += r.cost()
	for _, k := range r.keys {
		table[k] = append(table[k], r)
	}
	if s.live[r.w] == nil {
		s.live[r.w] = make(map[*registration]struct{})
	}
	s.live[r.w][r] = struct{}{}
	return nil
}

func (s *state) set(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := len(key) + len(value)
	if err := s.fits(key, size); err != nil {
		return err
	}
	if err := s.mem.Set(bg, key, value); err != nil {
		return err
	}
	s.account(key, size)
	s.wake(key)
	return nil
}

// get returns key's value, or an empty one if it is missing, as the libuv
// server does.
func (s *state) get(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fitsReply("get", 8+s.valueLen(key)); err != nil {
		return nil, err
	}
	return s.getLocked(key)
}

// getLocked returns key's value uncopied: replies only read it.
func (s *state) getLocked(key string) ([]byte, error) {
	v, _, err := s.mem.View(bg, key)
	return v, err
}

func (s *state) multiGet(keys []string) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range keys {
		n += 8 + s.valueLen(k)
	}
	if err := s.fitsReply("multi-get", n); err != nil {
		return nil, err
	}
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
	n, err := s.addLocked(key, delta)
	if err != nil {
		return 0, err
	}
	s.wake(key)
	return n, nil
}

// addLocked runs ADD, within the store's limits.
func (s *state) addLocked(key string, delta int64) (int64, error) {
	if err := s.fits(key, counterSize(key)); err != nil {
		return 0, err
	}
	n, err := s.mem.Add(bg, key, delta)
	if err != nil {
		return 0, err
	}
	s.account(key, len(key)+len(strconv.FormatInt(n, 10)))
	return n, nil
}

// compareSet wakes waiters when it creates the key, as the libuv server
// and Memory do (1.13 does not).
func (s *state) compareSet(key string, expected, desired []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fits(key, len(key)+len(desired)); err != nil {
		return nil, err
	}
	v, err := s.mem.CompareSet(bg, key, expected, desired)
	if err != nil {
		return nil, err
	}
	// A present key holds what CompareSet returns: the value it kept or
	// the one it stored.
	if ok, _ := s.mem.Check(bg, key); ok {
		s.account(key, len(key)+len(v))
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

// waiting reports whether w has a WAIT or BARRIER outstanding.
func (s *state) waiting(w waker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live[w]) > 0
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
	return false, s.register(s.waits, &registration{w: w, keys: missing, missing: len(missing)})
}

// cancel drops every registration of w, as CANCEL_WAIT and disconnecting
// do. Releases already given stay given.
func (s *state) cancel(w waker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.live[w] {
		s.stored -= r.cost()
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
	ok, err := s.mem.Delete(bg, key)
	if ok {
		s.stored -= s.sizes[key]
		delete(s.sizes, key)
	}
	return ok, err
}

func (s *state) append(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := len(key) + s.valueLen(key) + len(value)
	if err := s.fits(key, size); err != nil {
		return err
	}
	if err := s.mem.Append(bg, key, value); err != nil {
		return err
	}
	s.account(key, size)
	s.wake(key)
	return nil
}

func (s *state) multiSet(keys []string, values [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The last value of a key listed twice is the one stored.
	sizes := make(map[string]int, len(keys))
	for i, k := range keys {
		sizes[k] = len(k) + len(values[i])
	}
	grow, added := 0, 0
	for k, size := range sizes {
		old, had := s.sizes[k]
		grow += size - old
		if !had {
			added++
		}
	}
	if n := len(s.sizes) + len(s.queues) + added; n > s.limits.MaxStoredKeys {
		return overLimit("keys stored", n, "MaxStoredKeys", s.limits.MaxStoredKeys)
	}
	if err := s.fitsBytes(grow); err != nil {
		return err
	}
	if err := s.mem.MultiSet(bg, keys, values); err != nil {
		return err
	}
	for k, size := range sizes {
		s.account(k, size)
	}
	for _, k := range keys {
		s.wake(k)
	}
	return nil
}

func (s *state) listKeys() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 8
	for k := range s.sizes {
		n += 8 + len(k)
	}
	if err := s.fitsReply("list-keys", n); err != nil {
		return nil, err
	}
	return s.mem.Keys(bg)
}

// barrier counts w in at key. It reports whether the count has reached
// worldSize, releasing those who came earlier, and otherwise registers w.
func (s *state) barrier(w waker, key string, worldSize int64) (now bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Refused, a barrier must not have counted its caller.
	if err := s.roomToWait(w, len(key)+counterSize(key)); err != nil {
		return false, err
	}
	n, err := s.addLocked(key, 1)
	if err != nil {
		return false, err
	}
	s.wake(key)
	if n < worldSize {
		return false, s.register(s.barriers, &registration{w: w, keys: []string{key}, missing: 1, barrier: true})
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
	size := len(value)
	if _, ok := s.queues[key]; !ok {
		if n := len(s.sizes) + len(s.queues); n >= s.limits.MaxStoredKeys {
			return overLimit("keys stored", n+1, "MaxStoredKeys", s.limits.MaxStoredKeys)
		}
		size += len(key)
	}
	if err := s.fitsBytes(size); err != nil {
		return err
	}
	s.stored += size
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
	s.stored -= len(head)
	if len(q) == 1 {
		s.stored -= len(key)
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
