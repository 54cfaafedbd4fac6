package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gocomms/gocomms/store"
)

func TestMemoryKeys(t *testing.T) {
	ctx := context.Background()
	m := store.NewMemory()
	if keys, err := m.Keys(ctx); err != nil || len(keys) != 0 {
		t.Errorf("Keys of an empty store = %q, %v", keys, err)
	}
	m.Set(ctx, "b", nil)
	m.Add(ctx, "a", 1)
	m.Set(ctx, "c", nil)
	m.Delete(ctx, "c")
	if keys, err := m.Keys(ctx); err != nil || !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("Keys = %q, %v; want [a b]", keys, err)
	}
	m.Close()
	if _, err := m.Keys(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Keys after Close = %v, want ErrClosed", err)
	}
}
