package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemoryWaitersCleanedUp: calls that give up leave no wake-up channel
// behind, so a long-lived store does not grow with abandoned waits.
func TestMemoryWaitersCleanedUp(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	for _, key := range []string{"a", "b", "c"} {
		if _, err := m.Get(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get(%q) = %v", key, err)
		}
	}
	if err := m.Wait(ctx, "a", "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v", err)
	}
	m.mu.Lock()
	n := len(m.waiters)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d waiter entries left after every wait gave up", n)
	}
}

func TestMemoryAddOverflow(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	if err := m.Set(ctx, "n", []byte("9223372036854775807")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(ctx, "n", 1); err == nil {
		t.Error("Add past MaxInt64 succeeded")
	}
	if v, _ := m.Get(ctx, "n"); string(v) != "9223372036854775807" {
		t.Errorf("a failed Add changed the value to %q", v)
	}
}
