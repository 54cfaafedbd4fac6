package cuda

import "unsafe"

// DeviceMemory is memory on a context's device (cuMemAlloc), or another
// process's device memory mapped into this one (Context.OpenIPC). Copies
// name a range of it by offset and length.
type DeviceMemory struct {
	ctx    *Context
	ptr    uint64 // CUdeviceptr; 0 for an empty allocation, which the driver never sees
	size   int
	opened bool // mapped by OpenIPC: unmapped, not freed
}

// Alloc allocates n bytes of device memory. The memory is not cleared. An
// empty allocation (n = 0) is allowed, and holds no driver memory.
func (c *Context) Alloc(n int) (*DeviceMemory, error) {
	const op = "Context.Alloc"
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if n < 0 {
		return nil, invalid(op, "%d bytes", n)
	}
	m := &DeviceMemory{ctx: c, size: n}
	if n > 0 {
		p, err := sysMemAlloc(c.h, n)
		if err != nil {
			return nil, err
		}
		m.ptr = p
	}
	c.mems[m] = struct{}{}
	return m, nil
}

// Len returns the allocation's size in bytes.
func (m *DeviceMemory) Len() int {
	if m == nil {
		return 0
	}
	return m.size
}

// Ptr returns the allocation's device address (its CUdeviceptr), for other
// CUDA libraries that take one. It is valid until Close.
func (m *DeviceMemory) Ptr() uint64 {
	if m == nil {
		return 0
	}
	return m.ptr
}

// Close frees the memory, or unmaps memory that OpenIPC mapped, which
// stays allocated in the process that exported it. A second Close fails
// with ErrClosed.
func (m *DeviceMemory) Close() error {
	const op = "DeviceMemory.Close"
	if m == nil || m.ctx == nil {
		return invalid(op, "DeviceMemory not made by Context.Alloc")
	}
	c := m.ctx
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if _, open := c.mems[m]; !open {
		return closed(op, "the DeviceMemory")
	}
	delete(c.mems, m)
	return m.free()
}

// free returns m to the driver, c.mu held for writing.
func (m *DeviceMemory) free() error {
	switch {
	case m.size == 0:
		return nil
	case m.opened:
		return sysIpcCloseMemHandle(m.ctx.h, m.ptr)
	}
	return sysMemFree(m.ctx.h, m.ptr)
}

// deviceRange checks, c.mu held, that m is open memory of c holding n
// bytes at off, and returns their address.
func (c *Context) deviceRange(op string, m *DeviceMemory, off, n int) (uint64, error) {
	switch {
	case m == nil || m.ctx == nil:
		return 0, invalid(op, "DeviceMemory not made by Context.Alloc")
	case m.ctx != c:
		return 0, invalid(op, "DeviceMemory of another context")
	}
	if _, open := c.mems[m]; !open {
		return 0, closed(op, "the DeviceMemory")
	}
	if off < 0 || n < 0 || off > m.size || n > m.size-off {
		return 0, invalid(op, "%d bytes at offset %d of a %d-byte allocation", n, off, m.size)
	}
	return m.ptr + uint64(off), nil
}

// deviceRanges checks both ranges of a device-to-device copy, which may
// not overlap: the driver's copies are undefined where they do.
func (c *Context) deviceRanges(op string, dst *DeviceMemory, dstOff int, src *DeviceMemory, srcOff, n int) (
	uint64, uint64, error) {
	to, err := c.deviceRange(op, dst, dstOff, n)
	if err != nil {
		return 0, 0, err
	}
	from, err := c.deviceRange(op, src, srcOff, n)
	if err != nil {
		return 0, 0, err
	}
	if dst == src && n > 0 && dstOff < srcOff+n && srcOff < dstOff+n {
		return 0, 0, invalid(op, "ranges [%d, %d) and [%d, %d) of one allocation overlap",
			dstOff, dstOff+n, srcOff, srcOff+n)
	}
	return to, from, nil
}

// CopyHtoD copies src to dst at offset off, and returns once src has been
// read.
func (c *Context) CopyHtoD(dst *DeviceMemory, off int, src []byte) error {
	const op = "Context.CopyHtoD"
	if err := c.rlock(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	to, err := c.deviceRange(op, dst, off, len(src))
	if err != nil || len(src) == 0 {
		return err
	}
	return sysCopyHtoD(c.h, to, src)
}

// CopyDtoH copies len(dst) bytes from src at offset off into dst, and
// returns once they are there, after the work queued before it on the
// context's streams.
func (c *Context) CopyDtoH(dst []byte, src *DeviceMemory, off int) error {
	const op = "Context.CopyDtoH"
	if err := c.rlock(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	from, err := c.deviceRange(op, src, off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	return sysCopyDtoH(c.h, dst, from)
}

// CopyDtoD copies n bytes from src at srcOff to dst at dstOff; the two
// ranges must not overlap. It may return before the device has finished:
// later copies, and work queued later on the context's streams, see its
// result.
func (c *Context) CopyDtoD(dst *DeviceMemory, dstOff int, src *DeviceMemory, srcOff, n int) error {
	const op = "Context.CopyDtoD"
	if err := c.rlock(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	to, from, err := c.deviceRanges(op, dst, dstOff, src, srcOff, n)
	if err != nil || n == 0 {
		return err
	}
	return sysCopyDtoD(c.h, to, from, n)
}

// Memset sets n bytes of dst at offset off to value. Like CopyDtoD, it
// may return before the device has finished, and what follows sees its
// result.
func (c *Context) Memset(dst *DeviceMemory, off, n int, value byte) error {
	const op = "Context.Memset"
	if err := c.rlock(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	to, err := c.deviceRange(op, dst, off, n)
	if err != nil || n == 0 {
		return err
	}
	return sysMemset(c.h, to, value, n)
}

// HostMemory is page-locked ("pinned") host memory that the driver
// allocated (cuMemAllocHost): the device reads and writes it directly, so
// copies to and from it are faster, and it is the only host memory that
// the asynchronous copies of a Stream may use.
type HostMemory struct {
	ctx  *Context
	p    unsafe.Pointer // C memory; nil for an empty allocation
	size int
}

// AllocHost allocates n bytes of pinned host memory. The memory is not
// cleared. An empty allocation (n = 0) is allowed.
func (c *Context) AllocHost(n int) (*HostMemory, error) {
	const op = "Context.AllocHost"
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if n < 0 {
		return nil, invalid(op, "%d bytes", n)
	}
	h := &HostMemory{ctx: c, size: n}
	if n > 0 {
		p, err := sysMemAllocHost(c.h, n)
		if err != nil {
			return nil, err
		}
		h.p = p
	}
	c.hosts[h] = struct{}{}
	return h, nil
}

// Len returns the allocation's size in bytes.
func (h *HostMemory) Len() int {
	if h == nil {
		return 0
	}
	return h.size
}

// Bytes returns the memory as a slice, nil once it is closed. The slice
// is C memory that Close frees: it must not be used after Close, nor
// after the Close of the context.
func (h *HostMemory) Bytes() []byte {
	if h == nil || h.ctx == nil {
		return nil
	}
	h.ctx.mu.RLock()
	defer h.ctx.mu.RUnlock()
	if _, open := h.ctx.hosts[h]; !open || h.size == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(h.p), h.size)
}

// Close frees the memory. A second Close fails with ErrClosed.
func (h *HostMemory) Close() error {
	const op = "HostMemory.Close"
	if h == nil || h.ctx == nil {
		return invalid(op, "HostMemory not made by Context.AllocHost")
	}
	c := h.ctx
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if _, open := c.hosts[h]; !open {
		return closed(op, "the HostMemory")
	}
	delete(c.hosts, h)
	if h.size == 0 {
		return nil
	}
	return sysMemFreeHost(c.h, h.p)
}

// pinned checks, c.mu held, that b lies in open pinned memory of c, and
// returns its address.
func (c *Context) pinned(op string, b []byte) (unsafe.Pointer, error) {
	p := unsafe.Pointer(unsafe.SliceData(b))
	for h := range c.hosts {
		base := uintptr(h.p)
		if h.size > 0 && uintptr(p) >= base && uintptr(p)-base+uintptr(len(b)) <= uintptr(h.size) {
			return p, nil
		}
	}
	return nil, invalid(op, "%d bytes at %p are not in this context's pinned memory (Context.AllocHost)",
		len(b), p)
}
