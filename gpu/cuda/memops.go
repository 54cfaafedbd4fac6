package cuda

import "github.com/gocomms/gocomms/internal/names"

// WaitCond is the condition Stream.WaitValue32 and WaitValue64 wait for,
// between the word w in device memory and the value v; its values are the
// driver's CU_STREAM_WAIT_VALUE_*.
type WaitCond uint32

const (
	// WaitGEQ waits until w has reached v, counting modulo 2^32 (2^64):
	// int32(w-v) >= 0. A counter that one side increments can be waited
	// on across its wraparound.
	WaitGEQ WaitCond = 0
	WaitEQ  WaitCond = 1 // w == v
	WaitAnd WaitCond = 2 // w&v != 0
	// WaitNor waits until ^(w|v) != 0. Some devices cannot: the driver's
	// error matches ResultNotSupported.
	WaitNor WaitCond = 3
)

func (c WaitCond) String() string {
	return names.Of(c, "WaitCond", []string{WaitGEQ: "GEQ", WaitEQ: "EQ", WaitAnd: "AND", WaitNor: "NOR"})
}

// WriteValue32 queues a write of v to the 4-byte word of m at offset off,
// which must be 4-byte aligned, after the work queued before it, whose
// writes it follows in memory too. With memory that another process
// exported or opened (DeviceMemory.IPCHandle, Context.OpenIPC), that
// process's streams may wait for it with WaitValue32: a flag between
// processes that no host thread relays. It needs a driver for CUDA 11.7
// or newer (ResultNotSupported otherwise).
func (s *Stream) WriteValue32(m *DeviceMemory, off int, v uint32) error {
	return s.writeValue("Stream.WriteValue32", m, off, uint64(v), 4)
}

// WriteValue64 is WriteValue32 for the 8-byte, 8-byte aligned word at off.
func (s *Stream) WriteValue64(m *DeviceMemory, off int, v uint64) error {
	return s.writeValue("Stream.WriteValue64", m, off, v, 8)
}

// WaitValue32 makes the work queued on s after this call wait until the
// 4-byte, 4-byte aligned word of m at off meets cond with v. It returns at
// once. The word may be written by this process's streams, or by another
// process that shares the memory; until then the stream stalls, and
// Synchronize with it, as the device cannot tell a late write from none.
func (s *Stream) WaitValue32(m *DeviceMemory, off int, v uint32, cond WaitCond) error {
	return s.waitValue("Stream.WaitValue32", m, off, uint64(v), 4, cond)
}

// WaitValue64 is WaitValue32 for the 8-byte, 8-byte aligned word at off.
func (s *Stream) WaitValue64(m *DeviceMemory, off int, v uint64, cond WaitCond) error {
	return s.waitValue("Stream.WaitValue64", m, off, v, 8, cond)
}

// word checks, c.mu held, that m holds an aligned word of width bytes at
// off, and returns its address.
func (c *Context) word(op string, m *DeviceMemory, off, width int) (uint64, error) {
	addr, err := c.deviceRange(op, m, off, width)
	if err != nil {
		return 0, err
	}
	if addr%uint64(width) != 0 {
		return 0, invalid(op, "offset %d is not %d-byte aligned", off, width)
	}
	return addr, nil
}

func (s *Stream) writeValue(op string, m *DeviceMemory, off int, v uint64, width int) error {
	c, err := s.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	addr, err := c.word(op, m, off, width)
	if err != nil {
		return err
	}
	return sysStreamWriteValue(c.h, s.h, addr, v, width)
}

func (s *Stream) waitValue(op string, m *DeviceMemory, off int, v uint64, width int, cond WaitCond) error {
	c, err := s.rlock(op)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	if cond > WaitNor {
		return invalid(op, "%v", cond)
	}
	addr, err := c.word(op, m, off, width)
	if err != nil {
		return err
	}
	return sysStreamWaitValue(c.h, s.h, addr, v, width, cond)
}

// MemOp is one operation of Stream.MemOps on the 8-byte, 8-byte aligned
// word of Mem at Off: a write of Value, as WriteValue64 queues it, or,
// with Wait, a wait until the word meets Cond with Value, as WaitValue64
// queues it.
type MemOp struct {
	Mem   *DeviceMemory
	Off   int
	Value uint64
	Wait  bool
	Cond  WaitCond
}

// MemOps queues ops on s, in order, as WriteValue64 and WaitValue64 would
// one by one, but in one driver call (cuStreamBatchMemOp_v2) for each 255
// of them. It checks every operation before it queues any (ErrInvalid).
func (s *Stream) MemOps(ops []MemOp) error {
	const name = "Stream.MemOps"
	c, err := s.rlock(name)
	if err != nil {
		return err
	}
	defer c.mu.RUnlock()
	if len(ops) == 0 {
		return nil
	}
	words := make([]uint64, 0, 3*len(ops))
	for _, op := range ops {
		addr, err := c.word(name, op.Mem, op.Off, 8)
		if err != nil {
			return err
		}
		kind := uint64(0) // a write
		if op.Wait {
			if op.Cond > WaitNor {
				return invalid(name, "%v", op.Cond)
			}
			kind = 1 + uint64(op.Cond)
		}
		words = append(words, kind, addr, op.Value)
	}
	return sysStreamMemOps(c.h, s.h, words)
}
