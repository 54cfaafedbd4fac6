package store_test

import (
	"testing"

	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}

func TestMemoryZeroValue(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return new(store.Memory) })
}

func TestPrefixConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		m := store.NewMemory()
		t.Cleanup(func() { m.Close() })
		return store.WithPrefix(m, "job")
	})
}
