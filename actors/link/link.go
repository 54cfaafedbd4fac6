package link

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
)

// Key names the frames of one operation on one link. Collective frames are
// keyed by the operation's sequence number alone (Tag 0): every message of
// the operation goes to the same collective actor. Point-to-point frames are
// keyed by the pair's ordinal and the user tag.
type Key struct {
	Kind transport.Kind
	Seq  uint64
	Tag  uint32
}

// KeyOf returns the routing key of an inbound frame.
func KeyOf(h transport.Header) Key {
	if h.Kind == transport.Collective {
		return Key{Kind: h.Kind, Seq: h.Seq}
	}
	return Key{Kind: h.Kind, Seq: h.Seq, Tag: h.Tag}
}

// Send asks the link to send a frame; the payload's ownership moves with
// it, or, if the frame's Sent is set, the payload is lent (see
// transport.Frame).
type Send struct{ Frame transport.Frame }

// Route asks the link to deliver the frames of Key to To, stashed ones first.
// Routing a collective sequence number also discards stashed collective
// frames of earlier sequence numbers: ops on a communicator run one at a
// time, so those belong to operations that already failed here.
type Route struct {
	Key Key
	To  *actor.PID
}

// Unroute ends a Route.
type Unroute struct{ Key Key }

// Delivered carries an inbound frame from a link to the actor its key is
// routed to, or to the link's parent for control frames. The receiver owns
// the payload.
type Delivered struct {
	Peer  int
	Frame transport.Frame
}

// Failed tells the link's parent, and every actor a key is routed to, that
// the connection to Peer failed. It follows every frame that arrived before
// the failure, so a receiver that still waits for Peer knows nothing more
// will come.
type Failed struct {
	Peer int
	Err  error
}

type connFailed struct{ err error }

// state is what survives a restart of the link actor.
type state struct {
	rt      *actors.Runtime
	peer    int
	conn    transport.Conn
	started bool
	failed  error
	routes  map[Key]*actor.PID
	stash   map[Key][]transport.Frame
}

// Props returns the Props of the link actor for conn to peer.
func Props(rt *actors.Runtime, peer int, conn transport.Conn) *actor.Props {
	st := &state{
		rt:     rt,
		peer:   peer,
		conn:   conn,
		routes: map[Key]*actor.PID{},
		stash:  map[Key][]transport.Frame{},
	}
	return rt.Props(func() actor.Actor { return &linkActor{state: st} })
}

type linkActor struct{ *state }

func (l *linkActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Delivered:
		l.deliver(ctx, m)
	case *Send:
		if l.failed != nil {
			transport.Release(m.Frame)
			return
		}
		if err := l.conn.Send(m.Frame); err != nil {
			l.fail(ctx, err)
		}
	case *Route:
		l.route(ctx, m)
	case *Unroute:
		delete(l.routes, m.Key)
	case *connFailed:
		l.fail(ctx, m.err)
	case *actor.Started:
		if !l.started {
			l.started = true
			l.conn.Start(handler{rt: l.rt, self: ctx.Self(), peer: l.peer})
		}
	case *actor.Stopping:
		l.conn.Close()
		for k, frames := range l.stash {
			for _, f := range frames {
				transport.PutBuffer(f.Payload)
			}
			delete(l.stash, k)
		}
	}
}

func (l *linkActor) deliver(ctx actor.Context, m *Delivered) {
	if m.Frame.Header.Kind == transport.Control {
		ctx.Send(ctx.Parent(), m)
		return
	}
	key := KeyOf(m.Frame.Header)
	if to := l.routes[key]; to != nil {
		ctx.Send(to, m)
		return
	}
	l.stash[key] = append(l.stash[key], m.Frame)
}

func (l *linkActor) route(ctx actor.Context, m *Route) {
	if m.Key.Kind == transport.Collective {
		for k, frames := range l.stash {
			if k.Kind == transport.Collective && k.Seq < m.Key.Seq {
				for _, f := range frames {
					transport.PutBuffer(f.Payload)
				}
				delete(l.stash, k)
			}
		}
	}
	l.routes[m.Key] = m.To
	for _, f := range l.stash[m.Key] {
		ctx.Send(m.To, &Delivered{Peer: l.peer, Frame: f})
	}
	delete(l.stash, m.Key)
	if l.failed != nil {
		ctx.Send(m.To, &Failed{Peer: l.peer, Err: l.failed})
	}
}

func (l *linkActor) fail(ctx actor.Context, err error) {
	if l.failed != nil {
		return
	}
	l.failed = err
	// Nothing more can arrive; closing lets a peer that is finalizing see
	// its connection drained now rather than after its close timeout.
	l.conn.Close()
	failed := &Failed{Peer: l.peer, Err: err}
	ctx.Send(ctx.Parent(), failed)
	for _, to := range l.routes {
		ctx.Send(to, failed)
	}
}

// handler turns transport callbacks into messages to the link actor.
type handler struct {
	rt   *actors.Runtime
	self *actor.PID
	peer int
}

func (h handler) HandleFrame(f transport.Frame) {
	h.rt.System.Root.Send(h.self, &Delivered{Peer: h.peer, Frame: f})
}

func (h handler) HandleError(err error) {
	h.rt.System.Root.Send(h.self, &connFailed{err: err})
}
