package rank

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/transport"
)

// OpenWindow starts the actor of a window of this rank, under the rank,
// and calls Done with it. Every link routes the window's frames to it,
// the links made later too. Config's communicator fields are the rank's.
type OpenWindow struct {
	Config window.Config
	Done   func(*actor.PID, error)
}

// CloseWindow stops the actor of window ID and calls Done once it has
// stopped: the operations it still held have failed by then.
type CloseWindow struct {
	ID   uint64
	Done func()
}

// openWindow is a window actor of the rank.
type openWindow struct {
	id     uint64
	pid    *actor.PID
	closed func() // CloseWindow's Done, once asked
}

const windowPrefix = "win"

func (r *rankActor) openWindow(ctx actor.Context, m *OpenWindow) {
	if err := r.sequencer.usable(); err != nil {
		m.Done(nil, err)
		return
	}
	cfg := m.Config
	cfg.Comm, cfg.CommID, cfg.Rank, cfg.Size = r.cfg.Comm, r.cfg.CommID, r.cfg.Rank, r.cfg.Size
	pid := r.rt.SpawnChild(ctx, window.Producer(r.rt, cfg), fmt.Sprintf("%s%d-", windowPrefix, cfg.ID))
	r.windows = append(r.windows, openWindow{id: cfg.ID, pid: pid})
	for _, l := range r.links.order {
		if l.live {
			ctx.Send(l.pid, windowRoute(cfg.ID, pid))
		}
	}
	m.Done(pid, nil)
}

func windowRoute(id uint64, pid *actor.PID) *link.Route {
	return &link.Route{Key: link.Key{Kind: transport.Window, Seq: id}, To: pid, Frames: link.Unbounded}
}

// routeWindows routes every open window's frames on a new link.
func (r *rankActor) routeWindows(ctx actor.Context, l *peerLink) {
	for _, w := range r.windows {
		ctx.Send(l.pid, windowRoute(w.id, w.pid))
	}
}

func (r *rankActor) closeWindow(ctx actor.Context, m *CloseWindow) {
	i := slices.IndexFunc(r.windows, func(w openWindow) bool { return w.id == m.ID })
	if i < 0 || r.windows[i].closed != nil {
		m.Done()
		return
	}
	w := &r.windows[i]
	w.closed = m.Done
	for _, l := range r.links.order {
		if l.live {
			ctx.Send(l.pid, &link.Unroute{Key: link.Key{Kind: transport.Window, Seq: w.id}})
		}
	}
	ctx.Stop(w.pid)
}

// needLink answers a window actor's NeedLink. The errors name the rank
// that failed, which need not be the one asked for.
func (r *rankActor) needLink(ctx actor.Context, m *window.NeedLink) {
	answer := &window.Link{Peer: m.Peer}
	if err := r.sequencer.usable(); err != nil {
		answer.Err = err
	} else if l, err := r.connect(ctx, m.Peer); err != nil {
		answer.Err = err
	} else {
		answer.PID, answer.Plane = l.pid, l.plane
	}
	ctx.Send(m.From, answer)
}

// revokeWindows tells every window that the communicator broke, aborted
// or was revoked: a window hears of a failure from its own links only if
// it has one to the failed rank, and not at all from a link the
// supervisor gave up on.
func (r *rankActor) revokeWindows(ctx actor.Context, err error) {
	for _, w := range r.windows {
		ctx.Send(w.pid, &window.Revoked{Err: err})
	}
}

// windowStopped forgets a window actor that stopped, and reports whether
// who was one.
func (r *rankActor) windowStopped(who *actor.PID) bool {
	i := slices.IndexFunc(r.windows, func(w openWindow) bool { return w.pid.Equal(who) })
	if i < 0 {
		return false
	}
	done := r.windows[i].closed
	r.windows = slices.Delete(r.windows, i, i+1)
	if done != nil {
		done()
	}
	return true
}
