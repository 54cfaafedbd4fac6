package gocomms

import (
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
)

// Hooks see every operation a caller starts: the collectives, sends,
// receives and batches, splits (OpSplit, for Split and SplitByColor),
// Finalize (OpFinalize), and a window's creation (new_window), its
// operations (window_put, window_get, ...) and Close (window_close). Not
// seen: what the communicator issues for itself (a split's exchange, the
// object collectives' steps), and puts and gets a process does itself on
// window memory it maps (Window.Access), which are loads and stores.
//
// A pre-hook's error rejects the operation on the rank it ran on. For a
// split, it fails the split on every rank, through the exchange that
// checks the groups; for any other collective the other ranks run into
// their timeout, as when one rank never calls.

// PreHook runs before an operation is issued; an error rejects the
// operation before anything moves.
type PreHook func(op *Op) error

// IssueHook runs once an operation is issued, before it ends, with the
// Work that follows it (torchcomms' post-hook).
type IssueHook func(op *Op, w *Work)

// OpFinalize names Finalize as the hooks see it.
const OpFinalize OpName = "finalize"

// observe runs the hooks of an operation that does not go through issue
// (a split, Finalize, a window's creation and Close): the pre-hooks, whose
// error rejects it, then the issue hooks with a Work that end finishes
// (end does nothing if it was rejected).
func (c *Comm) observe(op *Op) (end func(error), err error) {
	if err := c.preHook(op); err != nil {
		return func(error) {}, err
	}
	issue := hooks(c, &c.issueHooks)
	if len(issue) == 0 {
		return func(error) {}, nil
	}
	w := newWork(op, nil)
	for _, h := range issue {
		h(op, w)
	}
	return w.finish, nil
}

// preHook numbers op, as issue does, and runs the pre-hooks on it.
func (c *Comm) preHook(op *Op) error {
	op.ID = opIDs.Add(1)
	for _, h := range hooks(c, &c.preHooks) {
		if err := h(op); err != nil {
			return c.opError(op, err)
		}
	}
	return nil
}

// issueHook runs the issue hooks on op and its Work.
func (c *Comm) issueHook(op *Op, w *Work) {
	for _, h := range hooks(c, &c.issueHooks) {
		h(op, w)
	}
}

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
