package gocomms

import (
	"slices"

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
// It is two short slices, not a map: every operation's Work carries one,
// and a simulation keeps a million of them.
type hookSet[F any] struct {
	next  int
	ids   []int // of hooks, ascending
	hooks []F
}

func (s *hookSet[F]) add(f F) (id int) {
	id = s.next
	s.next++
	s.ids = append(s.ids, id)
	s.hooks = append(s.hooks, f)
	return id
}

// remove drops hook id into new slices: a list returned before keeps
// what it had, and adding only writes past its end.
func (s *hookSet[F]) remove(id int) {
	i, ok := slices.BinarySearch(s.ids, id)
	if !ok {
		return
	}
	s.ids = slices.Delete(slices.Clone(s.ids), i, i+1)
	s.hooks = slices.Delete(slices.Clone(s.hooks), i, i+1)
}

// list returns the hooks in registration order, for callers to read only.
func (s *hookSet[F]) list() []F { return s.hooks[:len(s.hooks):len(s.hooks)] }
