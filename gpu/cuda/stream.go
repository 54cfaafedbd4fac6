package cuda

import (
	"time"
	"unsafe"
)

// Stream is a queue of work the device runs in order (cuStreamCreate).
// Its copies return once queued; Synchronize, Query, or an Event recorded
// after them says when they are done. It also waits for work queued
// earlier by the context's synchronous copies and Memset, and they for it
// (a stream created with CU_STREAM_DEFAULT).
type Stream struct {
	ctx *Context
	h   unsafe.Pointer // CUstream
}

// NewStream creates a stream.
func (c *Context) NewStream() (*Stream, error) { return c.newStream("Context.NewStream", false) }

// NewNonBlockingStream creates a stream that neither waits for the
// legacy default stream nor holds it up (CU_STREAM_NON_BLOCKING): its
// work runs beside a stream stalled on a wait, which a synchronous copy
// could not.
func (c *Context) NewNonBlockingStream() (*Stream, error) {
	return c.newStream("Context.NewNonBlockingStream", true)
}

func (c *Context) newStream(op string, nonBlocking bool) (*Stream, error) {
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	h, err := sysStreamCreate(c.h, nonBlocking)
	if err != nil {
		return nil, err
	}
	s := &Stream{ctx: c, h: h}
	c.streams[s] = struct{}{}
	return s, nil
}

// Handle returns the stream's CUstream (a cudaStream_t), for other CUDA
// libraries that queue work on it, such as NCCL. It is valid until Close.
func (s *Stream) Handle() uintptr {
	if s == nil {
		return 0
	}
	return uintptr(s.h)
}

// checkStream checks, c.mu held, that s is an open stream of c.
func (c *Context) checkStream(op string, s *Stream) error {
	switch {
	case s == nil || s.ctx == nil:
		return invalid(op, "Stream not made by Context.NewStream")
	case s.ctx != c:
		return invalid(op, "Stream of another context")
	}
	if _, open := c.streams[s]; !open {
		return closed(op, "the stream")
	}
	return nil
}

// rlock takes its context's mu for reading and returns the context when
// s is open; otherwise it returns why not, holding nothing.
func (s *Stream) rlock(op string) (*Context, error) {
	if s == nil || s.ctx == nil {
		return nil, invalid(op, "Stream not made by Context.NewStream")
	}
	c := s.ctx
	if err := c.rlock(op); err != nil {
		return nil, err
	}
	if err := c.checkStream(op, s); err != nil {
		c.mu.RUnlock()
		return nil, err
	}
	return c, nil
}

// CopyHtoD queues a copy of src to dst at offset off. src must lie in
// pinned memory of the stream's context (HostMemory.Bytes), and must not
// change until the copy is done.
func (s *Stream) CopyHtoD(dst *DeviceMemory, off int, src []byte) error {
	const op = "Stream.CopyHtoD"
	c, err := s.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	to, err := c.deviceRange(op, dst, off, len(src))
	if err != nil || len(src) == 0 {
		return err
	}
	from, err := c.pinned(op, src)
	if err != nil {
		return err
	}
	return sysCopyHtoDAsync(c.h, s.h, to, from, len(src))
}

// CopyDtoH queues a copy of len(dst) bytes from src at offset off into
// dst, which must lie in pinned memory of the stream's context
// (HostMemory.Bytes); dst holds them once the copy is done.
func (s *Stream) CopyDtoH(dst []byte, src *DeviceMemory, off int) error {
	const op = "Stream.CopyDtoH"
	c, err := s.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	from, err := c.deviceRange(op, src, off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	to, err := c.pinned(op, dst)
	if err != nil {
		return err
	}
	return sysCopyDtoHAsync(c.h, s.h, to, from, len(dst))
}

// CopyDtoD queues a copy of n bytes from src at srcOff to dst at dstOff;
// the two ranges must not overlap.
func (s *Stream) CopyDtoD(dst *DeviceMemory, dstOff int, src *DeviceMemory, srcOff, n int) error {
	const op = "Stream.CopyDtoD"
	c, err := s.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	to, from, err := c.deviceRanges(op, dst, dstOff, src, srcOff, n)
	if err != nil || n == 0 {
		return err
	}
	return sysCopyDtoDAsync(c.h, s.h, to, from, n)
}

// Wait makes the work queued on s after this call wait until the device
// reaches e's latest Record. It returns at once. e must belong to the
// stream's context; an event never recorded is no wait at all.
func (s *Stream) Wait(e *Event) error {
	const op = "Stream.Wait"
	c, err := s.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	if err := c.checkEvent(op, e); err != nil {
		return err
	}
	return sysStreamWaitEvent(c.h, s.h, e.h)
}

// Synchronize returns once all the work queued on s is done.
func (s *Stream) Synchronize() error {
	c, err := s.rlock("Stream.Synchronize")
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return sysStreamSynchronize(c.h, s.h)
}

// Query reports whether all the work queued on s is done, without
// waiting.
func (s *Stream) Query() (bool, error) {
	c, err := s.rlock("Stream.Query")
	if err != nil {
		return false, err
	}
	defer c.mu.RUnlock()
	return sysStreamQuery(c.h, s.h)
}

// Close destroys the stream. Work already queued on it still completes.
// A second Close fails with ErrClosed.
func (s *Stream) Close() error {
	const op = "Stream.Close"
	if s == nil || s.ctx == nil {
		return invalid(op, "Stream not made by Context.NewStream")
	}
	c := s.ctx
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if err := c.checkStream(op, s); err != nil {
		return err
	}
	delete(c.streams, s)
	return sysStreamDestroy(c.h, s.h)
}

// Event marks a point in a stream's work (cuEventCreate): Record places
// it, and Synchronize, Query, Stream.Wait and Elapsed refer to the latest
// place. Events made by NewEvent record timing; those made by NewIPCEvent
// or OpenIPCEvent do not, and their latest place is that of the latest
// Record in any process.
type Event struct {
	ctx *Context
	h   unsafe.Pointer // CUevent
	ipc bool           // interprocess, without timing
}

// NewEvent creates an event.
func (c *Context) NewEvent() (*Event, error) { return c.newEvent("Context.NewEvent", false) }

func (c *Context) newEvent(op string, ipc bool) (*Event, error) {
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	h, err := sysEventCreate(c.h, ipc)
	if err != nil {
		return nil, err
	}
	e := &Event{ctx: c, h: h, ipc: ipc}
	c.events[e] = struct{}{}
	return e, nil
}

// checkEvent checks, c.mu held, that e is an open event of c.
func (c *Context) checkEvent(op string, e *Event) error {
	switch {
	case e == nil || e.ctx == nil:
		return invalid(op, "Event not made by Context.NewEvent")
	case e.ctx != c:
		return invalid(op, "Event of another context")
	}
	if _, open := c.events[e]; !open {
		return closed(op, "the event")
	}
	return nil
}

// rlock is Stream.rlock for an event.
func (e *Event) rlock(op string) (*Context, error) {
	if e == nil || e.ctx == nil {
		return nil, invalid(op, "Event not made by Context.NewEvent")
	}
	c := e.ctx
	if err := c.rlock(op); err != nil {
		return nil, err
	}
	if err := c.checkEvent(op, e); err != nil {
		c.mu.RUnlock()
		return nil, err
	}
	return c, nil
}

// Record places e after the work queued so far on s, of the same
// context, replacing the place of any earlier Record.
func (e *Event) Record(s *Stream) error {
	const op = "Event.Record"
	c, err := e.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	if err := c.checkStream(op, s); err != nil {
		return err
	}
	return sysEventRecord(c.h, e.h, s.h)
}

// Synchronize returns once the device has reached e's latest Record, at
// once if there is none.
func (e *Event) Synchronize() error {
	c, err := e.rlock("Event.Synchronize")
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return sysEventSynchronize(c.h, e.h)
}

// Query reports whether the device has reached e's latest Record (true
// if there is none), without waiting.
func (e *Event) Query() (bool, error) {
	c, err := e.rlock("Event.Query")
	if err != nil {
		return false, err
	}
	defer c.mu.RUnlock()
	return sysEventQuery(c.h, e.h)
}

// Elapsed returns the device time from start's latest Record to e's, with
// a resolution of about half a microsecond. Both must have been recorded
// and reached: the driver's error otherwise matches ResultInvalidHandle
// (never recorded) or ResultNotReady (not reached yet). Interprocess
// events have no timing: ErrInvalid.
func (e *Event) Elapsed(start *Event) (time.Duration, error) {
	const op = "Event.Elapsed"
	c, err := e.rlock(op)
	if err != nil {
		return 0, err
	}
	defer c.mu.RUnlock()
	if err := c.checkEvent(op, start); err != nil {
		return 0, err
	}
	if e.ipc || start.ipc {
		return 0, invalid(op, "interprocess events record no timing")
	}
	ms, err := sysEventElapsed(c.h, start.h, e.h)
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event. A second Close fails with ErrClosed.
func (e *Event) Close() error {
	const op = "Event.Close"
	if e == nil || e.ctx == nil {
		return invalid(op, "Event not made by Context.NewEvent")
	}
	c := e.ctx
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if err := c.checkEvent(op, e); err != nil {
		return err
	}
	delete(c.events, e)
	return sysEventDestroy(c.h, e.h)
}
