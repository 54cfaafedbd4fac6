package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/store"
)

// waitTimeout bounds every wait that should succeed; it matters only when a
// store loses a wake-up, and then the test fails.
const waitTimeout = 30 * time.Second

// Run runs the conformance suite against the stores newStore returns, one
// fresh store per subtest. Subtests run one after another, each checking
// that it leaves no goroutine behind; the suite closes each store after its
// subtest, and newStore may register cleanups of its own.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"SetGet", testSetGet},
		{"EmptyKey", testEmptyKey},
		{"GetWaits", testGetWaits},
		{"GetTimeout", testGetTimeout},
		{"Add", testAdd},
		{"AddConcurrent", testAddConcurrent},
		{"CompareSet", testCompareSet},
		{"DeleteCheckNumKeys", testDeleteCheckNumKeys},
		{"WaitSeveral", testWaitSeveral},
		{"Append", testAppend},
		{"MultiGetSet", testMultiGetSet},
		{"PrefixIsolation", testPrefixIsolation},
		{"CloseUnblocksWaiters", testCloseUnblocksWaiters},
		{"ValuesAreCopies", testValuesAreCopies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaktest.Check(t)
			s := newStore(t)
			t.Cleanup(func() { s.Close() })
			tt.run(t, s)
		})
	}
}

// testContext bounds a test's blocking calls.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func mustSet(t *testing.T, s store.Store, key, value string) {
	t.Helper()
	if err := s.Set(testContext(t), key, []byte(value)); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

// wantGet checks that key holds want (it must exist: Get would wait).
func wantGet(t *testing.T, s store.Store, key, want string) {
	t.Helper()
	got, err := s.Get(testContext(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("Get(%q) = %q, want %q", key, got, want)
	}
}

func wantCheck(t *testing.T, s store.Store, want bool, keys ...string) {
	t.Helper()
	got, err := s.Check(testContext(t), keys...)
	if err != nil {
		t.Fatalf("Check(%q): %v", keys, err)
	}
	if got != want {
		t.Errorf("Check(%q) = %v, want %v", keys, got, want)
	}
}

// result is what a call started in another goroutine returned.
type result struct {
	value []byte
	err   error
}

// goGet runs Get in a goroutine; the caller must receive from the channel.
func goGet(ctx context.Context, s store.Store, key string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := s.Get(ctx, key)
		ch <- result{v, err}
	}()
	return ch
}

// receive waits for a call started in another goroutine.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not return within %v", what, waitTimeout)
		var zero T
		return zero
	}
}
