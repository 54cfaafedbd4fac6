package gocomms

import (
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
)

// PreHook runs before an operation is issued; an error rejects the
// operation before anything moves.
type PreHook func(op *Op) error

// PostHook runs after an operation was issued, with its Work.
type PostHook func(op *Op, w *Work)

// AbortHook runs when the communicator aborts, before a process abort.
type AbortHook func(err error)

// NaNCheck is a PreHook that rejects an operation whose float input holds a
// NaN, as torchcomms' NanCheckHook.
func NaNCheck(op *Op) error {
	check := func(t *Tensor) error {
		if t != nil && tensor.HasNaN(t) {
			return commerr.Invalid("%s input %v holds NaN", op.Name, t)
		}
		return nil
	}
	for _, t := range op.Inputs {
		if err := check(t); err != nil {
			return err
		}
	}
	for _, m := range op.P2P {
		if m.Send {
			if err := check(m.Tensor); err != nil {
				return err
			}
		}
	}
	return nil
}

// hookSet keeps hooks in registration order; the caller serialises access.
type hookSet[F any] struct {
	next  int
	hooks map[int]F
	// listed is list's answer until the set changes: hooks run on every
	// operation and rarely change.
	listed []F
	valid  bool
}

func (s *hookSet[F]) add(f F) (id int) {
	if s.hooks == nil {
		s.hooks = map[int]F{}
	}
	id = s.next
	s.next++
	s.hooks[id] = f
	s.listed, s.valid = nil, false
	return id
}

func (s *hookSet[F]) remove(id int) {
	delete(s.hooks, id)
	s.listed, s.valid = nil, false
}

// list returns the hooks in registration order. The slice is shared until
// the set changes, which makes a new one: callers only read it.
func (s *hookSet[F]) list() []F {
	if s.valid {
		return s.listed
	}
	fs := make([]F, 0, len(s.hooks))
	for i := 0; i < s.next; i++ {
		if f, ok := s.hooks[i]; ok {
			fs = append(fs, f)
		}
	}
	s.listed, s.valid = fs, true
	return fs
}
