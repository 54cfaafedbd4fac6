package actors

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Clock is the engine's only source of time.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once after d, from outside the caller's actor; stop
	// cancels it and reports whether it did so before f ran.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Rand is the engine's only source of randomness.
type Rand interface {
	Uint64() uint64
}

// Runtime is what every actor is built from. Its fields are set once, before
// the first actor is spawned, and never change.
type Runtime struct {
	System     *actor.ActorSystem
	Clock      Clock
	Dispatcher actor.Dispatcher
	Mailbox    actor.MailboxProducer // nil: protoactor's unbounded mailbox
	Rand       Rand
	Logger     *slog.Logger // never nil; discards by default
}

// Props is the one way to build Props: it always applies the runtime's
// dispatcher (and mailbox), so no actor can escape the event loop.
func (rt *Runtime) Props(producer actor.Producer, opts ...actor.PropsOption) *actor.Props {
	all := make([]actor.PropsOption, 0, len(opts)+2)
	all = append(all, actor.WithDispatcher(rt.Dispatcher))
	if rt.Mailbox != nil {
		all = append(all, actor.WithMailbox(rt.Mailbox))
	}
	all = append(all, opts...)
	return actor.PropsFromProducer(producer, all...)
}

// After delivers msg to pid after d, through the mailbox, and returns a
// function that cancels the delivery if it has not happened yet.
func (rt *Runtime) After(d time.Duration, pid *actor.PID, msg any) (stop func() bool) {
	return rt.Clock.AfterFunc(d, func() { rt.System.Root.Send(pid, msg) })
}

// Shutdown stops the actor system's background work.
func (rt *Runtime) Shutdown() {
	rt.System.Shutdown()
	if p, ok := rt.Dispatcher.(*pool); ok {
		p.stop()
	}
}
