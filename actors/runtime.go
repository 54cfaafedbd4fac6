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
// the first actor is spawned, and never change. Those that are
// protoactor's are unexported, so that the packages that take a Runtime
// (gocomms' options) name none of its types: Actors and New set them.
type Runtime struct {
	Clock  Clock
	Rand   Rand
	Logger *slog.Logger // never nil; discards by default

	system     *actor.ActorSystem
	dispatcher actor.Dispatcher
	mailbox    actor.MailboxProducer // nil: protoactor's unbounded mailbox
	spawner    Spawner               // nil: protoactor spawns and dispatches
}

// Actors is where a runtime runs its actors: protoactor's system, the
// dispatcher of their mailboxes' turns, and the mailboxes (nil:
// protoactor's unbounded one). NewRuntime makes its own; the simulator
// brings its event loop, and may bring a Spawner that delivers to the
// actors itself.
type Actors struct {
	System     *actor.ActorSystem
	Dispatcher actor.Dispatcher
	Mailbox    actor.MailboxProducer
	Spawner    Spawner
}

// Spawner spawns and runs actors in place of protoactor's actor
// contexts, processes and registry, for a runtime that dispatches its
// actors itself: the simulator, whose single loop needs none of their
// synchronisation. It keeps protoactor's semantics (system messages
// first, nothing while suspended, failures to the supervisor, Started,
// Stopping, Stopped, Restarting and Terminated) for the same actor code.
type Spawner interface {
	// SpawnFunc returns how to spawn an actor of producer, supervised so;
	// its turns go through dispatcher.
	SpawnFunc(producer actor.Producer, s Supervision, dispatcher actor.Dispatcher) actor.SpawnFunc
}

// ChildSpawner is the actor.Context of a Spawner's actors: it spawns a
// child with no Props, which a Spawner has no use for.
type ChildSpawner interface {
	SpawnChild(producer actor.Producer, dispatcher actor.Dispatcher, prefix string) *actor.PID
}

// Supervision says who handles an actor's failures and its children's.
type Supervision struct {
	// Children handles the failures of the actor's children; nil:
	// protoactor's default strategy.
	Children actor.SupervisorStrategy
	// Guardian handles the actor's own failures when it is spawned at the
	// root; nil: protoactor's default strategy.
	Guardian actor.SupervisorStrategy
}

// New returns a runtime over a's actors, clock and randomness; a nil
// logger discards.
func New(a Actors, clock Clock, rand Rand, logger *slog.Logger) *Runtime {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runtime{Clock: clock, Rand: rand, Logger: logger, system: a.System, dispatcher: a.Dispatcher, mailbox: a.Mailbox, spawner: a.Spawner}
}

// System returns the actor system.
func (rt *Runtime) System() *actor.ActorSystem { return rt.system }

// WithDispatcher returns a copy of rt whose actors take their turns
// through d (the simulator's frozen turns of a crashed rank).
func (rt *Runtime) WithDispatcher(d actor.Dispatcher) *Runtime {
	c := *rt
	c.dispatcher = d
	return &c
}

// WithClock returns a copy of rt whose actors read c (the simulator's
// skewed clocks).
func (rt *Runtime) WithClock(c Clock) *Runtime {
	cp := *rt
	cp.Clock = c
	return &cp
}

// WithLogger returns a copy of rt whose actors log to l: a
// communicator's actors log with its name, rank and size.
func (rt *Runtime) WithLogger(l *slog.Logger) *Runtime {
	cp := *rt
	cp.Logger = l
	return &cp
}

// SpawnChild spawns an actor of producer, which supervises no children of
// its own, as a child of ctx's actor, named prefix and a number: as
// ctx.SpawnPrefix with Props, which a Spawner's actors go without.
func (rt *Runtime) SpawnChild(ctx actor.Context, producer actor.Producer, prefix string) *actor.PID {
	if c, ok := ctx.(ChildSpawner); ok && rt.spawner != nil {
		return c.SpawnChild(producer, rt.dispatcher, prefix)
	}
	return ctx.SpawnPrefix(rt.Props(producer), prefix)
}

// Props is the Props of an actor of producer that supervises no children
// of its own.
func (rt *Runtime) Props(producer actor.Producer) *actor.Props {
	return rt.SupervisedProps(producer, Supervision{})
}

// SupervisedProps is the one way to build Props: it always applies the
// runtime's dispatcher (and mailbox, or spawner), so no actor can escape
// the event loop.
func (rt *Runtime) SupervisedProps(producer actor.Producer, s Supervision) *actor.Props {
	opts := []actor.PropsOption{actor.WithDispatcher(rt.dispatcher)}
	if rt.mailbox != nil {
		opts = append(opts, actor.WithMailbox(rt.mailbox))
	}
	if s.Children != nil {
		opts = append(opts, actor.WithSupervisor(s.Children))
	}
	if s.Guardian != nil {
		opts = append(opts, actor.WithGuardian(s.Guardian))
	}
	if rt.spawner != nil {
		opts = append(opts, actor.WithSpawnFunc(rt.spawner.SpawnFunc(producer, s, rt.dispatcher)))
	}
	return actor.PropsFromProducer(producer, opts...)
}

// After delivers msg to pid after d, through the mailbox, and returns a
// function that cancels the delivery if it has not happened yet.
func (rt *Runtime) After(d time.Duration, pid *actor.PID, msg any) (stop func() bool) {
	return rt.Clock.AfterFunc(d, func() { rt.system.Root.Send(pid, msg) })
}

// Shutdown stops the actor system's background work.
func (rt *Runtime) Shutdown() {
	rt.system.Shutdown()
	if p, ok := rt.dispatcher.(*pool); ok {
		p.stop()
	}
}
