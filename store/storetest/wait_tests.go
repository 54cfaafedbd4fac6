package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store"
)

func testGetWaits(t *testing.T, s store.Store) {
	ctx := testContext(t)
	wait := goGet(ctx, s, "late")
	setDone := make(chan error, 1)
	go func() { setDone <- s.Set(ctx, "late", []byte("value")) }()
	if err := receive(t, "Set", setDone); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if r := receive(t, "Get", wait); r.err != nil || string(r.value) != "value" {
		t.Errorf("Get of a key set later = %q, %v; want \"value\"", r.value, r.err)
	}

	// Many waiters on one key are all released.
	waits := make([]<-chan result, 16)
	for i := range waits {
		waits[i] = goGet(ctx, s, "crowd")
	}
	mustSet(t, s, "crowd", "all")
	for _, w := range waits {
		if r := receive(t, "Get", w); r.err != nil || string(r.value) != "all" {
			t.Errorf("Get = %q, %v; want \"all\"", r.value, r.err)
		}
	}
}

func testGetTimeout(t *testing.T, s store.Store) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := s.Get(ctx, "never-set")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get past its deadline returned %v, want DeadlineExceeded", err)
	}
	if err != nil && !strings.Contains(err.Error(), "never-set") {
		t.Errorf("the error %q does not name the key", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if err := s.Wait(ctx, "a-key", "b-key"); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context returned %v, want Canceled", err)
	} else if !strings.Contains(err.Error(), "a-key") {
		t.Errorf("the error %q does not name the missing keys", err)
	}

	// A key that exists needs no waiting.
	mustSet(t, s, "there", "v")
	if _, err := s.Get(testContext(t), "there"); err != nil {
		t.Errorf("Get of an existing key: %v", err)
	}
}

func testWaitSeveral(t *testing.T, s store.Store) {
	ctx := testContext(t)
	done := make(chan error, 1)
	go func() { done <- s.Wait(ctx, "w1", "w2", "w3", "w1") }()
	mustSet(t, s, "w2", "")
	if err := s.Append(ctx, "w1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before its last key was set", err)
	default:
	}
	if _, err := s.Add(ctx, "w3", 1); err != nil { // Add releases waiters too
		t.Fatal(err)
	}
	if err := receive(t, "Wait", done); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Errorf("Wait for no keys: %v", err)
	}
	if err := s.Wait(ctx, "w1", "w2"); err != nil {
		t.Errorf("Wait for existing keys: %v", err)
	}
}

func testPrefixIsolation(t *testing.T, s store.Store) {
	ctx := testContext(t)
	a, b := store.WithPrefix(s, "a"), store.WithPrefix(s, "b")
	nested := store.WithPrefix(a, "b") // not the same keys as b
	// Every view sets k before any reads it, so that a set that reached
	// another view's key would show.
	views := []struct {
		s     store.Store
		value string
	}{{a, "in a"}, {b, "in b"}, {nested, "in a, b"}}
	for _, v := range views {
		mustSet(t, v.s, "k", v.value)
	}
	for _, v := range views {
		wantGet(t, v.s, "k", v.value)
	}
	wantCheck(t, s, false, "k")

	mustSet(t, a, "only-a", "1")
	wantCheck(t, a, true, "only-a")
	wantCheck(t, b, false, "only-a")
	wantCheck(t, nested, false, "only-a")

	if _, err := a.Add(ctx, "n", 5); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Add(ctx, "n", 1); err != nil || got != 1 {
		t.Errorf("Add under b after Add under a = %d, %v; want 1", got, err)
	}
	if ok, err := b.Delete(ctx, "k"); err != nil || !ok {
		t.Errorf("Delete under b = %v, %v", ok, err)
	}
	wantGet(t, a, "k", "in a")

	// A waiter under b is not released by the same key under a.
	wait := goGet(ctx, b, "late")
	mustSet(t, a, "late", "wrong")
	mustSet(t, b, "late", "right")
	if r := receive(t, "Get", wait); r.err != nil || string(r.value) != "right" {
		t.Errorf("Get under b = %q, %v; want \"right\"", r.value, r.err)
	}

	// Closing a view does not close the store or the other views.
	if err := a.Close(); err != nil {
		t.Fatalf("Close of a view: %v", err)
	}
	if _, err := a.Get(ctx, "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get on a closed view returned %v, want ErrClosed", err)
	}
	wantGet(t, b, "late", "right")
	wantCheck(t, s, true) // the store still answers
}

// testCloseUnblocksWaiters: Close releases every waiting call with
// ErrClosed, and every later call fails with it.
func testCloseUnblocksWaiters(t *testing.T, s store.Store) {
	ctx := testContext(t)
	mustSet(t, s, "present", "v")
	waits := []<-chan result{goGet(ctx, s, "never")}
	for _, call := range []func() error{
		func() error { return s.Wait(ctx, "present", "never") },
		func() error { _, err := s.MultiGet(ctx, "present", "never"); return err },
	} {
		ch := make(chan result, 1)
		go func() { ch <- result{err: call()} }()
		waits = append(waits, ch)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, w := range waits {
		if r := receive(t, "a waiting call", w); !errors.Is(r.err, store.ErrClosed) {
			t.Errorf("a call waiting across Close returned %v, want ErrClosed", r.err)
		}
	}

	later := map[string]func() error{
		"Set":        func() error { return s.Set(ctx, "k", nil) },
		"Get":        func() error { _, err := s.Get(ctx, "present"); return err },
		"Add":        func() error { _, err := s.Add(ctx, "n", 1); return err },
		"CompareSet": func() error { _, err := s.CompareSet(ctx, "k", nil, []byte("x")); return err },
		"Delete":     func() error { _, err := s.Delete(ctx, "present"); return err },
		"Check":      func() error { _, err := s.Check(ctx, "present"); return err },
		"Wait":       func() error { return s.Wait(ctx, "present") },
		"NumKeys":    func() error { _, err := s.NumKeys(ctx); return err },
		"Append":     func() error { return s.Append(ctx, "k", []byte("x")) },
		"MultiGet":   func() error { _, err := s.MultiGet(ctx, "present"); return err },
		"MultiSet":   func() error { return s.MultiSet(ctx, []string{"k"}, [][]byte{{1}}) },
	}
	for name, call := range later {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close returned %v, want ErrClosed", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
