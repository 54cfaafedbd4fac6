package flight

import (
	"slices"
	"sync"
	"weak"
)

// Live lists the communicators of a process not yet finalized, in
// creation order, for a dump of them all. It holds them weakly: one
// dropped without being removed (a simulated job's, say) goes with its
// memory. The zero value is an empty list.
type Live[T any] struct {
	mu    sync.Mutex
	items []weak.Pointer[T]
}

// Add lists p.
func (l *Live[T]) Add(p *T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == cap(l.items) {
		l.forget(nil) // before growing: amortised, the list stays in proportion to the live
	}
	l.items = append(l.items, weak.Make(p))
}

// Remove unlists p.
func (l *Live[T]) Remove(p *T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(p)
}

// List returns those listed and still alive, in the order they were added.
func (l *Live[T]) List() []*T {
	l.mu.Lock()
	defer l.mu.Unlock()
	items := make([]*T, 0, len(l.items))
	for _, w := range l.items {
		if p := w.Value(); p != nil {
			items = append(items, p)
		}
	}
	return items
}

// forget drops p and those already collected; the caller holds the lock.
func (l *Live[T]) forget(p *T) {
	l.items = slices.DeleteFunc(l.items, func(w weak.Pointer[T]) bool {
		x := w.Value()
		return x == nil || x == p
	})
}
