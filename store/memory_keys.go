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
