package devcomm

import (
	"math/bits"
	"sync"

	"github.com/gocomms/gocomms/gpu/cuda"
)

// minPinned is the smallest buffer the pool keeps: smaller operations
// share its size class rather than each pinning a page of its own.
const minPinned = 64 << 10

// pinned keeps pinned host buffers by power-of-two size class: pinning
// takes the driver milliseconds, so a steady loop reuses them.
type pinned struct {
	ctx  *cuda.Context
	mu   sync.Mutex
	free map[int][]*cuda.HostMemory
	all  []*cuda.HostMemory
}

func sizeClass(n int) int {
	if n <= minPinned {
		return minPinned
	}
	return 1 << bits.Len(uint(n-1))
}

// get returns a buffer of at least n bytes.
func (p *pinned) get(n int) (*cuda.HostMemory, error) {
	c := sizeClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.free[c]; len(l) > 0 {
		h := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		return h, nil
	}
	h, err := p.ctx.AllocHost(c)
	if err != nil {
		return nil, err
	}
	p.all = append(p.all, h)
	return h, nil
}

// put gives a buffer back for reuse.
func (p *pinned) put(h *cuda.HostMemory) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = make(map[int][]*cuda.HostMemory)
	}
	p.free[h.Len()] = append(p.free[h.Len()], h)
}

// close frees every buffer; none may be in use.
func (p *pinned) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for _, h := range p.all {
		if err := h.Close(); err != nil && first == nil {
			first = err
		}
	}
	p.all, p.free = nil, nil
	return first
}
