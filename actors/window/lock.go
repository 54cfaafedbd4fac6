package window

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gocomms/gocomms/backend"
)

// locks is a window's lock, as its own actor keeps it: held shared by any
// number of ranks or exclusively by one, and granted to those that wait
// in the order they asked. A lock orders only the ranks that take it: an
// operation needs none (every rank's window is open to every rank, as
// after MPI_Win_lock_all).
type locks struct {
	exclusive int   // the rank holding it exclusively, or -1
	shared    []int // the ranks holding it shared, a rank once per hold
	queue     []lockRequest
}

// lockRequest is a rank's wait for the lock: a peer's, answered by a
// reply to its operation id, or this rank's own, answered through op.
type lockRequest struct {
	origin    int
	id        uint64
	exclusive bool
	op        *backend.WindowOp
}

func newLocks() locks { return locks{exclusive: -1} }

// grantable reports whether q can hold the lock now.
func (l *locks) grantable(q lockRequest) bool {
	if q.exclusive {
		return l.exclusive < 0 && len(l.shared) == 0
	}
	return l.exclusive < 0
}

// take queues q, and returns the requests granted now, in order: q's
// turn comes once those before it are granted.
func (l *locks) take(q lockRequest) []lockRequest {
	l.queue = append(l.queue, q)
	return l.grant()
}

// release ends origin's hold, or withdraws its wait if it holds nothing,
// and returns the requests that can be granted now.
func (l *locks) release(origin int) []lockRequest {
	switch i := slices.Index(l.shared, origin); {
	case l.exclusive == origin:
		l.exclusive = -1
	case i >= 0:
		l.shared = slices.Delete(l.shared, i, i+1)
	default:
		if i := slices.IndexFunc(l.queue, func(q lockRequest) bool { return q.origin == origin }); i >= 0 {
			l.queue = slices.Delete(l.queue, i, i+1)
		}
	}
	return l.grant()
}

func (l *locks) grant() []lockRequest {
	var granted []lockRequest
	for len(l.queue) > 0 && l.grantable(l.queue[0]) {
		q := l.queue[0]
		l.queue = l.queue[1:]
		if q.exclusive {
			l.exclusive = q.origin
		} else {
			l.shared = append(l.shared, q.origin)
		}
		granted = append(granted, q)
	}
	return granted
}

// granted answers the requests the lock was just granted to.
func (w *windowActor) granted(ctx actor.Context, qs []lockRequest) {
	for _, q := range qs {
		if q.op != nil {
			q.op.Done(nil)
			continue
		}
		w.out = w.out[:0]
		w.reply(ctx, q.origin, backend.WindowLock, q.id, nil)
	}
}
