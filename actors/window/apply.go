package window

import (
	"encoding/binary"
	"fmt"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
)

// target is a window's memory and signal slots as its own actor applies
// operations to them: one at a time, so that each is atomic with respect
// to every other the actor applies.
type target struct {
	mem   []byte
	slots []uint64
}

// check reports why an operation of code c over [off, off+n) of the
// window cannot be applied, or nil.
func (t *target) check(c backend.WindowCode, r *request) error {
	if r.Offset > uint64(len(t.mem)) || r.Len > uint64(len(t.mem))-r.Offset {
		return fmt.Errorf("%v of %d bytes at offset %d is outside the window's %d bytes", c, r.Len, r.Offset, len(t.mem))
	}
	switch c {
	case backend.WindowAccumulate, backend.WindowGetAccumulate, backend.WindowFetchAndOp:
		size := uint64(r.DType.Size())
		if r.Offset%size != 0 || r.Len%size != 0 {
			return fmt.Errorf("%v of %d bytes at offset %d is not in whole %v elements", c, r.Len, r.Offset, r.DType)
		}
		if err := reduce.New(r.Reduce).Supports(r.DType); err != nil || r.Reduce == reduce.Avg || r.Reduce == reduce.PreMulSum {
			return fmt.Errorf("%v: %v does not accumulate %v", c, r.Reduce, r.DType)
		}
		if c == backend.WindowFetchAndOp && r.Len != 8 {
			return fmt.Errorf("%v on %d bytes, not one 8-byte word", c, r.Len)
		}
	case backend.WindowCompareAndSwap:
		if r.Offset%8 != 0 {
			return fmt.Errorf("%v at offset %d, not 8-byte aligned", c, r.Offset)
		}
	}
	if r.SignalOp != backend.SignalNone && uint64(r.Slot) >= uint64(len(t.slots)) {
		return fmt.Errorf("%v: signal slot %d of %d", c, r.Slot, len(t.slots))
	}
	return nil
}

// apply applies a checked operation, appending what it reads back to out
// (the bytes before the operation, for the fetching ones) and returning
// it.
func (t *target) apply(c backend.WindowCode, r *request, data, out []byte) []byte {
	region := t.mem[r.Offset : r.Offset+r.Len]
	switch c {
	case backend.WindowPut:
		copy(region, data)
	case backend.WindowGet:
		out = append(out, region...)
	case backend.WindowAccumulate:
		reduce.Combine(reduce.New(r.Reduce), r.DType, region, region, data)
	case backend.WindowGetAccumulate:
		out = append(out, region...)
		reduce.Combine(reduce.New(r.Reduce), r.DType, region, region, data)
	case backend.WindowFetchAndOp:
		out = binary.NativeEndian.AppendUint64(out, reduce.FetchAndOpWord(region, r.Reduce, r.DType, data))
	case backend.WindowCompareAndSwap:
		out = binary.NativeEndian.AppendUint64(out, reduce.CompareAndSwapWord(region, data[:8], data[8:]))
	}
	if r.SignalOp != backend.SignalNone {
		t.signal(int(r.Slot), r.SignalOp, r.Value)
	}
	return out
}

// signal applies a signal to its slot.
func (t *target) signal(slot int, op backend.SignalOp, v uint64) {
	switch op {
	case backend.SignalSet:
		t.slots[slot] = v
	case backend.SignalAdd:
		t.slots[slot] += v
	}
}

// holds reports whether slot c v.
func holds(c backend.SignalCmp, slot, v uint64) bool {
	d := int64(slot - v)
	switch c {
	case backend.SignalEQ:
		return slot == v
	case backend.SignalNE:
		return slot != v
	case backend.SignalLT:
		return d < 0
	case backend.SignalLE:
		return d <= 0
	case backend.SignalGT:
		return d > 0
	case backend.SignalGE:
		return d >= 0
	}
	return false
}
