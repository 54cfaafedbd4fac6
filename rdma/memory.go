package rdma

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// registry holds every registered Memory in the process by key. It is
// process-wide on purpose: a registration is not tied to one transport (a
// buffer of weights is registered once and served to every peer), so the
// software provider's responders, one per transport, all look keys up here.
var registry = struct {
	mu sync.RWMutex
	m  map[uint64]*Memory
}{m: make(map[uint64]*Memory)}

// Memory is a buffer registered for remote access. Peers reach it through
// its RemoteBuffer; local operations take Views of it.
//
// While it is registered, peers may write and read it at any moment their
// owner's transport lets them: concurrent access by this process's own code
// to the same bytes is the program's race to avoid, as with any memory
// shared with another thread. Atomics are the exception: the provider
// applies them with sync/atomic, so the owner may use sync/atomic on the
// same aligned words.
type Memory struct {
	key  uint64
	base uint64 // address of buf in this process, as peers name it
	buf  []byte

	// access is held shared by each remote access in progress and taken
	// exclusively by Deregister, which so waits them out.
	access sync.RWMutex
	dead   atomic.Bool // set by Deregister, before it takes access
}

// Register registers buf for remote access and returns its handle. buf may
// be empty. The same bytes may be registered more than once; each
// registration has a key of its own.
func Register(buf []byte) (*Memory, error) {
	m := &Memory{buf: buf, base: addrOf(buf)}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for {
		// Random rather than counted, so that a handle from an earlier run
		// of the owner, or from another process, names nothing here.
		m.key = nonZeroRandom()
		if _, taken := registry.m[m.key]; !taken {
			break
		}
	}
	registry.m[m.key] = m
	return m, nil
}

// lookup returns the registration named by key, or nil.
func lookup(key uint64) *Memory {
	registry.mu.RLock()
	m := registry.m[key]
	registry.mu.RUnlock()
	return m
}

// Len returns the length of the registered buffer.
func (m *Memory) Len() int { return len(m.buf) }

// Remote returns the handle that lets a peer reach the whole buffer. Send
// it to the peer (MarshalBinary) and let it Slice the part it needs.
func (m *Memory) Remote() RemoteBuffer {
	return RemoteBuffer{Addr: m.base, Len: uint64(len(m.buf)), Key: m.key}
}

// View returns n bytes at offset off, as the source of a Write.
func (m *Memory) View(off, n int) (View, error) {
	if err := m.check(off, n); err != nil {
		return View{}, err
	}
	return View{m: m, off: off, n: n}, nil
}

// MutableView returns n bytes at offset off, as the destination of a Read.
func (m *Memory) MutableView(off, n int) (MutableView, error) {
	if err := m.check(off, n); err != nil {
		return MutableView{}, err
	}
	return MutableView{m: m, off: off, n: n}, nil
}

func (m *Memory) check(off, n int) error {
	if off < 0 || n < 0 || off > len(m.buf) || n > len(m.buf)-off {
		return fmt.Errorf("rdma: view [%d, %d+%d) of key %#x: registered buffer has %d bytes: %w",
			off, off, n, m.key, len(m.buf), ErrBounds)
	}
	return nil
}

// Deregister ends the registration. Later remote accesses fail at their
// requester with ErrUnregistered, and local operations on its views fail
// before they start. Deregister waits for remote accesses in progress to
// finish, so that once it returns no peer touches the buffer. A second
// Deregister returns an error wrapping ErrUnregistered.
func (m *Memory) Deregister() error {
	registry.mu.Lock()
	if registry.m[m.key] != m {
		registry.mu.Unlock()
		return fmt.Errorf("rdma: deregister key %#x: %w: already deregistered", m.key, ErrUnregistered)
	}
	delete(registry.m, m.key)
	registry.mu.Unlock()
	m.dead.Store(true)
	m.access.Lock()
	m.access.Unlock()
	return nil
}

// acquire starts a remote access to n bytes at address addr and returns
// them, or the status that refuses the access. A successful acquire must
// be followed by release.
func (m *Memory) acquire(addr, n uint64) ([]byte, status) {
	m.access.RLock()
	if m.dead.Load() {
		m.access.RUnlock()
		return nil, statusUnregistered
	}
	size := uint64(len(m.buf))
	if addr < m.base || addr-m.base > size || n > size-(addr-m.base) {
		m.access.RUnlock()
		return nil, statusBounds
	}
	off := addr - m.base
	return m.buf[off : off+n : off+n], statusOK
}

func (m *Memory) release() { m.access.RUnlock() }

// View is a range of registered memory that a Write sends from. The zero
// View is invalid.
type View struct {
	m      *Memory
	off, n int
}

// Len returns the view's length in bytes.
func (v View) Len() int { return v.n }

// bytes returns the view's bytes, or an error if it is the zero View or its
// memory has been deregistered.
func (v View) bytes() ([]byte, error) {
	if v.m == nil {
		return nil, fmt.Errorf("the zero View: %w", ErrInvalid)
	}
	if v.m.dead.Load() {
		return nil, fmt.Errorf("local view of key %#x: %w: deregistered", v.m.key, ErrUnregistered)
	}
	return v.m.buf[v.off : v.off+v.n : v.off+v.n], nil
}

// MutableView is a range of registered memory that a Read fills. The zero
// MutableView is invalid.
type MutableView struct {
	m      *Memory
	off, n int
}

// Len returns the view's length in bytes.
func (v MutableView) Len() int { return v.n }

// View returns the same range as a View, to Write from.
func (v MutableView) View() View { return View(v) }

func (v MutableView) bytes() ([]byte, error) { return View(v).bytes() }
