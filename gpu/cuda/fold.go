package cuda

import (
	"encoding/binary"
	"errors"

	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// Table lists ranges of device memory, in device memory of its own, for
// Stream.Fold, whose one kernel reads and writes them all: the same
// elements of several ranks' buffers, mapped into this context.
type Table struct {
	ctx    *Context
	addrs  *DeviceMemory // each range's address, 8 bytes a range
	ranges []TableRange
}

// TableRange is one range of a Table: Len bytes of Mem at Off.
type TableRange struct {
	Mem      *DeviceMemory
	Off, Len int
}

// maxTableRanges bounds a table, as the kernels' launch checks do.
const maxTableRanges = 1024

// NewTable writes the addresses of ranges into device memory and returns
// the table, until Close. The ranges must lie in open memory of c and not
// overlap (ErrInvalid): a fold writes its destinations element by
// element, as it reads them.
func (c *Context) NewTable(ranges []TableRange) (*Table, error) {
	const op = "Context.NewTable"
	if len(ranges) == 0 || len(ranges) > maxTableRanges {
		return nil, invalid(op, "%d ranges; want 1 to %d", len(ranges), maxTableRanges)
	}
	addrs := make([]byte, 8*len(ranges))
	if err := c.rlock(op); err != nil {
		return nil, err
	}
	starts := make([]uint64, len(ranges))
	for i, r := range ranges {
		p, err := c.deviceRange(op, r.Mem, r.Off, r.Len)
		if err != nil {
			c.mu.RUnlock()
			return nil, err
		}
		for j := range i {
			if p < starts[j]+uint64(ranges[j].Len) && starts[j] < p+uint64(r.Len) {
				c.mu.RUnlock()
				return nil, invalid(op, "ranges %d and %d overlap", j, i)
			}
		}
		starts[i] = p
		binary.LittleEndian.PutUint64(addrs[8*i:], p)
	}
	c.mu.RUnlock()
	m, err := c.Alloc(len(addrs))
	if err != nil {
		return nil, err
	}
	if err := c.CopyHtoD(m, 0, addrs); err != nil {
		return nil, errors.Join(err, m.Close())
	}
	return &Table{ctx: c, addrs: m, ranges: append([]TableRange(nil), ranges...)}, nil
}

// Len is the number of ranges in the table.
func (t *Table) Len() int { return len(t.ranges) }

// Close frees the table's memory; the ranges are the caller's.
func (t *Table) Close() error { return t.addrs.Close() }

// foldKernel names the kernel that folds dt with op's kind.
func foldKernel(k reduce.Kind, dt tensor.DType) string {
	return "gc_fold_" + k.String() + "_" + dtypeSuffix[dt]
}

// Fold queues, over count elements of dt at byte offset off of every
// range of t, the reduction with op of ranges [0, sources), finished as
// Finish finishes sources contributions, stored into ranges [first,
// first+dests): one kernel where Combine and Finish take sources, and
// copies dests more. The destinations may be sources: every element is
// read from all of them before it is written. The elements must lie in
// every range used, aligned to dt's size (ErrInvalid), as for Combine.
func (s *Stream) Fold(op reduce.Op, dt tensor.DType, t *Table, sources, first, dests, off, count int) error {
	const name = "Stream.Fold"
	return s.launch(name, func(c *Context) (kernelLaunch, error) {
		if err := checkReduce(name, op, dt, count); err != nil {
			return kernelLaunch{}, err
		}
		if t == nil || t.ctx != c {
			return kernelLaunch{}, invalid(name, "a Table of another context")
		}
		if sources < 1 || first < 0 || dests < 0 || sources > t.Len() || first > t.Len()-dests {
			return kernelLaunch{}, invalid(name, "sources [0, %d) and destinations [%d, %d) of a table of %d",
				sources, first, first+dests, t.Len())
		}
		tab, err := c.deviceRange(name, t.addrs, 0, 8*t.Len())
		if err != nil {
			return kernelLaunch{}, err
		}
		size := dt.Size()
		for i := range max(sources, first+dests) {
			r := t.ranges[i]
			if off < 0 || off > r.Len || count*size > r.Len-off {
				return kernelLaunch{}, invalid(name, "%d elements of %v at offset %d of a %d-byte range", count, dt, off, r.Len)
			}
			if _, err := c.elements(name, r.Mem, r.Off+off, count*size, size); err != nil {
				return kernelLaunch{}, err
			}
		}
		if count == 0 {
			return kernelLaunch{}, nil
		}
		return kernelLaunch{
			name:  foldKernel(op.Kind(), dt),
			count: count,
			args:  []uint64{tab, uint64(sources), uint64(first), uint64(dests), uint64(off), uint64(count), finishScalar(op, dt, sources)},
		}, nil
	})
}
