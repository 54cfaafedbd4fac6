package engine

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/nvl"
)

// memory is a communicator's registered memory: the memory files it
// allocated (Alloc), which the ranks of its host map, and the peers' it
// mapped. A send whose region lies in a file of this rank's goes as a
// descriptor of it (collective.Memory), and the receiver reduces or
// copies straight from the sender's tensor: one copy in all, where a
// payload through a slot takes two.
type memory struct {
	own       atomic.Pointer[[]region] // sorted by address; copied on write
	described atomic.Uint64            // sends that went as descriptors

	mu     sync.Mutex
	allocs []region            // what own holds, for Free and close
	peers  map[peerFile][]byte // the peers' files mapped here
	unmaps []func() error
}

// region is one allocation: its memory and the file it lives in.
type region struct {
	start  uintptr
	mem    []byte
	shared *nvl.Shared
}

// peerFile names a peer's memory file: a process's descriptor numbers
// are used again, its files' inodes are not while it holds them.
type peerFile struct {
	pid int
	ino uint64
}

// descriptorLen is a descriptor's size: the file's owner, descriptor,
// inode and size, and the region's offset in it.
const descriptorLen = 40

// alloc returns size bytes of zeroed memory: in a memory file where
// shared says the host's ranks map one another's, else from the heap,
// where it is only kept track of.
func (m *memory) alloc(size int, shared bool) ([]byte, error) {
	if size <= 0 {
		return nil, commerr.Invalid("registered memory of %d bytes", size)
	}
	r := region{mem: make([]byte, size)}
	if shared {
		s, err := nvl.NewShared(size)
		if err != nil {
			return nil, fmt.Errorf("registered memory: %w", err)
		}
		r = region{mem: s.Mem, shared: s}
	}
	r.start = uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(m.allocs, r.start, func(r region, start uintptr) int { return cmp.Compare(r.start, start) })
	m.allocs = slices.Insert(m.allocs, i, r)
	m.publish()
	return r.mem, nil
}

// free lets go of the allocation that starts at mem: this rank's mapping
// and file go; peers that mapped it keep theirs until they close.
func (m *memory) free(mem []byte) error {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := slices.BinarySearchFunc(m.allocs, start, func(r region, start uintptr) int { return cmp.Compare(r.start, start) })
	if !ok || len(mem) == 0 {
		return commerr.Invalid("memory not allocated by this communicator, or freed already")
	}
	r := m.allocs[i]
	m.allocs = slices.Delete(m.allocs, i, i+1)
	m.publish()
	if r.shared == nil {
		return nil
	}
	return r.shared.Close()
}

// publish makes allocs what Describe reads. Called with mu held.
func (m *memory) publish() {
	own := slices.Clone(m.allocs)
	m.own.Store(&own)
}

// Describe appends the descriptor of b to dst if b lies in one
// allocation.
func (m *memory) Describe(b, dst []byte) ([]byte, bool) {
	own := m.own.Load()
	if own == nil || len(b) == 0 {
		return dst, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	i, found := slices.BinarySearchFunc(*own, p, func(r region, p uintptr) int { return cmp.Compare(r.start, p) })
	if !found {
		i--
	}
	if i < 0 {
		return dst, false
	}
	r := (*own)[i]
	off := p - r.start
	if r.shared == nil || off+uintptr(len(b)) > uintptr(len(r.mem)) {
		return dst, false
	}
	h := r.shared.Handle
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, uint64(h.PID))
	dst = le.AppendUint64(dst, uint64(h.FD))
	dst = le.AppendUint64(dst, h.Ino)
	dst = le.AppendUint64(dst, uint64(len(r.mem)))
	m.described.Add(1)
	return le.AppendUint64(dst, uint64(off)), true
}

// Resolve maps the peer's file the descriptor names, once, and returns
// the n bytes it names there.
func (m *memory) Resolve(desc []byte, n int) ([]byte, error) {
	if len(desc) != descriptorLen {
		return nil, fmt.Errorf("a descriptor of %d bytes, want %d", len(desc), descriptorLen)
	}
	le := binary.LittleEndian
	h := nvl.SharedHandle{PID: int(le.Uint64(desc)), FD: int(le.Uint64(desc[8:])), Ino: le.Uint64(desc[16:])}
	size, off := le.Uint64(desc[24:]), le.Uint64(desc[32:])
	if h.PID <= 0 || h.FD < 0 || size == 0 || size > 1<<46 || off > size || uint64(n) > size-off {
		return nil, errors.New("a descriptor that names no region of a file")
	}
	key := peerFile{pid: h.PID, ino: h.Ino}
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.peers[key]
	if !ok || uint64(len(mem)) < size {
		mapped, unmap, err := nvl.MapShared(h, int(size))
		if err != nil {
			return nil, err
		}
		if m.peers == nil {
			m.peers = map[peerFile][]byte{}
		}
		m.peers[key], mem = mapped, mapped
		m.unmaps = append(m.unmaps, unmap)
	}
	return mem[off : off+uint64(n) : off+uint64(n)], nil
}

// close unmaps the peers' files. This rank's allocations stay until
// freed: the caller's tensors may outlive the communicator.
func (m *memory) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, unmap := range m.unmaps {
		unmap()
	}
	m.unmaps, m.peers = nil, nil
}
