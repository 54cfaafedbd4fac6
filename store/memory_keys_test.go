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

// TestMemoryView: a viewed value stays as it was while the key is written.
func TestMemoryView(t *testing.T) {
	ctx := context.Background()
	m := store.NewMemory()
	if _, ok, err := m.View(ctx, "k"); ok || err != nil {
		t.Errorf("View of a missing key = %v, %v", ok, err)
	}
	m.Set(ctx, "k", make([]byte, 3, 100))
	v, ok, err := m.View(ctx, "k")
	if !ok || err != nil || string(v) != "\x00\x00\x00" {
		t.Fatalf("View = %q, %v, %v", v, ok, err)
	}
	m.Append(ctx, "k", []byte("abc"))
	m.Set(ctx, "k", []byte("xyz"))
	if string(v) != "\x00\x00\x00" {
		t.Errorf("a viewed value changed to %q", v)
	}
	if v, _, _ := m.View(ctx, "k"); string(v) != "xyz" {
		t.Errorf("View = %q, want xyz", v)
	}
	m.Close()
	if _, _, err := m.View(ctx, "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("View after Close = %v, want ErrClosed", err)
	}
}
