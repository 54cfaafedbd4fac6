package devcomm

import (
	"cmp"
	"slices"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/tensor"
)

// span is a byte range of one device allocation that an operation's
// tensors cover, and its copy in pinned host memory.
type span struct {
	mem      *cuda.DeviceMemory
	off, end int
	host     []byte // end-off bytes of pinned memory
	write    bool   // the operation writes into it: copied back
}

// mirror is an operation's tensors copied to the host: the spans they
// cover and the host op that runs on the copies.
type mirror struct {
	spans []span
	op    backend.Op
}

// cover records the device range of t in m's spans, merging ranges that
// overlap so that tensors which alias stay aliased on the host.
func (m *mirror) cover(t *tensor.Tensor, write bool) error {
	if t == nil || t.NBytes() == 0 {
		return nil
	}
	dm, off, err := cuda.TensorMemory(t)
	if err != nil {
		return err
	}
	m.spans = append(m.spans, span{mem: dm, off: off, end: off + t.NBytes(), write: write})
	return nil
}

// merge sorts the spans and joins those of one allocation that overlap.
func (m *mirror) merge() {
	slices.SortFunc(m.spans, func(a, b span) int {
		if a.mem != b.mem {
			return cmp.Compare(a.mem.Ptr(), b.mem.Ptr())
		}
		return cmp.Compare(a.off, b.off)
	})
	out := m.spans[:0]
	for _, s := range m.spans {
		if n := len(out); n > 0 && out[n-1].mem == s.mem && s.off < out[n-1].end {
			last := &out[n-1]
			last.end = max(last.end, s.end)
			last.write = last.write || s.write
			continue
		}
		out = append(out, s)
	}
	m.spans = out
}

// bytes returns the pinned bytes that hold t.
func (m *mirror) bytes(t *tensor.Tensor) []byte {
	mem, off := t.Memory()
	for _, s := range m.spans {
		if s.mem == mem && s.off <= off && off+t.NBytes() <= s.end {
			return s.host[off-s.off : off-s.off+t.NBytes()]
		}
	}
	return nil // cover recorded every tensor, so merge left a span holding it
}

// host returns t's copy on the host: a CPU tensor over its pinned bytes.
func (m *mirror) host(t *tensor.Tensor) (*tensor.Tensor, error) {
	if t == nil {
		return nil, nil
	}
	if t.NBytes() == 0 {
		return tensor.New(t.DType(), t.Shape()...)
	}
	return tensor.FromBytes(t.DType(), m.bytes(t), t.Shape()...)
}

// build covers op's tensors, which the caller then gives pinned memory,
// and returns the spans' total size.
func (m *mirror) build(op *backend.Op) (int, error) {
	m.spans = m.spans[:0]
	for _, t := range op.Inputs {
		if err := m.cover(t, false); err != nil {
			return 0, err
		}
	}
	for _, t := range op.Outputs {
		if err := m.cover(t, true); err != nil {
			return 0, err
		}
	}
	for _, p := range op.P2P {
		if err := m.cover(p.Tensor, !p.Send); err != nil {
			return 0, err
		}
	}
	m.merge()
	total := 0
	for _, s := range m.spans {
		total += s.end - s.off
	}
	return total, nil
}

// place gives the spans their pinned bytes, cut from buf, and makes the
// host op: op with each tensor replaced by its host copy.
func (m *mirror) place(op *backend.Op, buf []byte) error {
	for i := range m.spans {
		s := &m.spans[i]
		n := s.end - s.off
		s.host, buf = buf[:n:n], buf[n:]
	}
	m.op = *op
	m.op.Stream = nil
	var err error
	if m.op.Inputs, err = m.hosts(op.Inputs); err != nil {
		return err
	}
	if m.op.Outputs, err = m.hosts(op.Outputs); err != nil {
		return err
	}
	if op.P2P != nil {
		m.op.P2P = slices.Clone(op.P2P)
		for i := range m.op.P2P {
			if m.op.P2P[i].Tensor, err = m.host(op.P2P[i].Tensor); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *mirror) hosts(ts []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if ts == nil {
		return nil, nil
	}
	out := make([]*tensor.Tensor, len(ts))
	for i, t := range ts {
		h, err := m.host(t)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// download queues the copy of every span to the host on s.
func (m *mirror) download(s *cuda.Stream) error {
	for _, sp := range m.spans {
		if err := s.CopyDtoH(sp.host, sp.mem, sp.off); err != nil {
			return err
		}
	}
	return nil
}

// upload queues the copy back of every span the operation wrote.
func (m *mirror) upload(s *cuda.Stream) error {
	for _, sp := range m.spans {
		if !sp.write {
			continue
		}
		if err := s.CopyHtoD(sp.mem, sp.off, sp.host); err != nil {
			return err
		}
	}
	return nil
}
