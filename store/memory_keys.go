package store

import (
	"context"
	"slices"
)

// Keys returns every key in m, sorted. It is not part of Store: PyTorch's
// LIST_KEYS query needs it from the server that a Memory backs.
func (m *Memory) Keys(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("keys"); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m.data))
	for k := range m.data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// View returns key's value without copying it, and whether key exists; it
// does not wait. The caller must not modify the value. It stays as it was
// returned even as key is written: Set and the like store a copy, and
// Append writes only past the value's end. It is not part of Store: the
// TCPStore server replies with values by reference, so that a reply naming
// one value many times does not cost many copies.
func (m *Memory) View(ctx context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open("view"); err != nil {
		return nil, false, err
	}
	v, ok := m.data[key]
	return v[:len(v):len(v)], ok, nil
}
