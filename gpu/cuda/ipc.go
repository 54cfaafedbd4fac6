package cuda

import "errors"

// ipcHandleSize is CU_IPC_HANDLE_SIZE, the size of the driver's handles.
const ipcHandleSize = 64

// The marshalled handles carry a tag ahead of the driver's bytes, so that
// a memory handle is not opened as an event's, nor bytes of some other
// format as either.
const (
	ipcMemTag   = "GCIM"
	ipcEventTag = "GCIE"
)

// IPCHandle names device memory of one process so that another process
// on the same host can map it (cuIpcGetMemHandle): the driver's 64 bytes,
// a value to send between the processes as MarshalBinary writes it. The
// zero IPCHandle names nothing.
type IPCHandle struct{ b [ipcHandleSize]byte }

// IPCEventHandle names an interprocess event so that another process on
// the same host can open it (cuIpcGetEventHandle), like IPCHandle for
// memory.
type IPCEventHandle struct{ b [ipcHandleSize]byte }

// MarshalBinary returns the handle as 68 bytes: a 4-byte tag and the
// driver's handle.
func (h IPCHandle) MarshalBinary() ([]byte, error) { return marshalIPC(ipcMemTag, &h.b), nil }

// UnmarshalBinary sets h from what MarshalBinary returned, in this process
// or another; anything else, an event's handle included, is ErrInvalid.
func (h *IPCHandle) UnmarshalBinary(data []byte) error {
	return unmarshalIPC("IPCHandle.UnmarshalBinary", ipcMemTag, &h.b, data)
}

// MarshalBinary returns the handle as 68 bytes: a 4-byte tag and the
// driver's handle.
func (h IPCEventHandle) MarshalBinary() ([]byte, error) { return marshalIPC(ipcEventTag, &h.b), nil }

// UnmarshalBinary sets h from what MarshalBinary returned, in this process
// or another; anything else, a memory handle included, is ErrInvalid.
func (h *IPCEventHandle) UnmarshalBinary(data []byte) error {
	return unmarshalIPC("IPCEventHandle.UnmarshalBinary", ipcEventTag, &h.b, data)
}

func marshalIPC(tag string, b *[ipcHandleSize]byte) []byte {
	return append([]byte(tag), b[:]...)
}

// unmarshalIPC checks the size and tag only: the driver's bytes are
// opaque, and the driver checks them when they are opened.
func unmarshalIPC(op, tag string, b *[ipcHandleSize]byte, data []byte) error {
	if len(data) != len(tag)+ipcHandleSize || string(data[:len(tag)]) != tag {
		return invalid(op, "%d bytes are not a marshalled handle of this kind", len(data))
	}
	copy(b[:], data[len(tag):])
	return nil
}

// IPCHandle exports the memory to other processes on this host, which map
// it with Context.OpenIPC. The memory must stay open here while they use
// it: its Close, or the context's, frees it under them. Empty memory, and
// memory that OpenIPC mapped, cannot be exported (ErrInvalid).
func (m *DeviceMemory) IPCHandle() (IPCHandle, error) {
	const op = "DeviceMemory.IPCHandle"
	var h IPCHandle
	if m == nil || m.ctx == nil {
		return h, invalid(op, "DeviceMemory not made by Context.Alloc")
	}
	c := m.ctx
	if err := c.rlock(op); err != nil {
		return h, err
	}
	defer c.mu.RUnlock()
	if _, err := c.deviceRange(op, m, 0, 0); err != nil {
		return h, err
	}
	switch {
	case m.size == 0:
		return h, invalid(op, "an empty allocation holds no driver memory")
	case m.opened:
		return h, invalid(op, "memory mapped from another process is exported by that process only")
	}
	return h, sysIpcGetMemHandle(c.h, m.ptr, &h.b)
}

// OpenIPC maps device memory that another process exported with
// DeviceMemory.IPCHandle, enabling peer access where it lies on another
// device. The result is DeviceMemory of this context, as long as the
// exported allocation (cuMemGetAddressRange tells its size), for copies
// and kernels like memory allocated here; its Close unmaps it. A handle
// exported by this same process is refused by the driver
// (ResultInvalidContext, as CUDA does).
func (c *Context) OpenIPC(h IPCHandle) (*DeviceMemory, error) {
	const op = "Context.OpenIPC"
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if h == (IPCHandle{}) {
		return nil, invalid(op, "the zero IPCHandle")
	}
	p, err := sysIpcOpenMemHandle(c.h, &h.b)
	if err != nil {
		return nil, err
	}
	_, size, err := sysMemAddressRange(c.h, p)
	if err != nil {
		return nil, errors.Join(err, sysIpcCloseMemHandle(c.h, p))
	}
	m := &DeviceMemory{ctx: c, ptr: p, size: size, opened: true}
	c.mems[m] = struct{}{}
	return m, nil
}

// NewIPCEvent creates an event that other processes on this host can open
// (Event.IPCHandle, Context.OpenIPCEvent). It records no timing.
func (c *Context) NewIPCEvent() (*Event, error) { return c.newEvent("Context.NewIPCEvent", true) }

// IPCHandle exports the event, which NewIPCEvent or OpenIPCEvent made, to
// other processes on this host; any other event is ErrInvalid.
func (e *Event) IPCHandle() (IPCEventHandle, error) {
	const op = "Event.IPCHandle"
	var h IPCEventHandle
	c, err := e.rlock(op)
	if err != nil {
		return h, err
	}
	defer c.mu.RUnlock()
	if !e.ipc {
		return h, invalid(op, "the event was not made by NewIPCEvent or OpenIPCEvent")
	}
	return h, sysIpcGetEventHandle(c.h, e.h, &h.b)
}

// OpenIPCEvent opens an event that another process exported with
// Event.IPCHandle. Its Record, in either process, places it for both:
// Stream.Wait and Synchronize here wait for work that the other process
// queued. Close releases this process's reference.
func (c *Context) OpenIPCEvent(h IPCEventHandle) (*Event, error) {
	const op = "Context.OpenIPCEvent"
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if h == (IPCEventHandle{}) {
		return nil, invalid(op, "the zero IPCEventHandle")
	}
	eh, err := sysIpcOpenEventHandle(c.h, &h.b)
	if err != nil {
		return nil, err
	}
	e := &Event{ctx: c, h: eh, ipc: true}
	c.events[e] = struct{}{}
	return e, nil
}
