package simulation

import (
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/ctxext"

	"github.com/gocomms/gocomms/actors"
)

// direct is the simulator's own dispatch of the engine's actors
// (actors.Spawner): each actor is a cell, which is at once its mailbox,
// its protoactor Process and the actor.Context its Receive is given, and
// the loop runs its turns. A PID's RequestId indexes the cells, which the
// process registry finds through an address resolver: no actor context,
// process, registry entry or mailbox of protoactor's is made, and a Send
// between actors is a slice index and a queue push.
//
// It keeps protoactor's semantics for the same actor code: system
// messages first, no user message while suspended; Started on spawn and
// restart; Stopping, the children stopped, Stopped and the parent's
// Terminated on stop; a PoisonPill stops after what came before it; a
// panic suspends the actor and goes to its parent's strategy (or its
// guardian's, at the root), whose Restart makes a new actor from the
// producer. Only what the engine uses is there: futures, requests,
// watches, stashing, receive timeouts and extensions panic.
type direct struct {
	sys   *actor.ActorSystem
	trace *Trace
	cells []*cell // by PID.RequestId; nil once stopped
	// spawning is the cell whose SpawnNamed is under way: protoactor
	// calls the child's SpawnFunc through the root context, which knows
	// no parent.
	spawning *cell
	// msg is the message of the turn under way: the loop runs one at a
	// time, so no cell keeps its own.
	msg any
}

// cellAddress is the Address of every cell's PID: not the registry's
// own, so that the registry asks the resolver.
const cellAddress = "simulation"

// newDirect makes the dispatch of sys's actors, tracing into trace.
func newDirect(sys *actor.ActorSystem, trace *Trace) *direct {
	d := &direct{sys: sys, trace: trace}
	sys.ProcessRegistry.RegisterAddressResolver(d.resolve)
	return d
}

func (d *direct) resolve(pid *actor.PID) (actor.Process, bool) {
	if pid.Address != cellAddress || int(pid.RequestId) >= len(d.cells) || d.cells[pid.RequestId] == nil {
		return nil, false
	}
	return d.cells[pid.RequestId], true
}

// cell returns the live cell of pid, or nil.
func (d *direct) cell(pid *actor.PID) *cell {
	if pid == nil || pid.Address != cellAddress || int(pid.RequestId) >= len(d.cells) {
		return nil
	}
	return d.cells[pid.RequestId]
}

// send delivers a user message, to a cell directly; a message to an
// actor gone is dropped, as protoactor's dead letters are.
func (d *direct) send(pid *actor.PID, msg any) {
	if c := d.cell(pid); c != nil {
		c.SendUserMessage(pid, msg)
	} else if pid != nil && pid.Address != cellAddress {
		d.sys.Root.Send(pid, msg)
	}
}

func (d *direct) sendSystem(pid *actor.PID, msg any) {
	if c := d.cell(pid); c != nil {
		c.SendSystemMessage(pid, msg)
	}
}

// SpawnFunc implements actors.Spawner.
func (d *direct) SpawnFunc(producer actor.Producer, s actors.Supervision, dispatcher actor.Dispatcher) actor.SpawnFunc {
	return func(_ *actor.ActorSystem, id string, _ *actor.Props, _ actor.SpawnerContext) (*actor.PID, error) {
		var parent *actor.PID
		if d.spawning != nil {
			parent = d.spawning.pid
		} else if s.Guardian != nil {
			// Protoactor makes a guardian for each strategy, which takes a
			// number from the registry; every root spawn brings a strategy
			// of its own (rank.Props), so this takes one too, and actors
			// have the same names under both dispatches.
			d.sys.ProcessRegistry.NextId()
		}
		return d.spawn(id, parent, producer, s, dispatcher)
	}
}

// spawn starts the actor of producer named id, a child of parent (nil:
// at the root).
func (d *direct) spawn(id string, parent *actor.PID, producer actor.Producer, s actors.Supervision, dispatcher actor.Dispatcher) (*actor.PID, error) {
	if len(d.cells) >= 1<<32-1 {
		return nil, errors.New("simulation: more actors spawned than PIDs can number")
	}
	c := &cell{d: d, parent: parent, producer: producer}
	if s.Children != nil || s.Guardian != nil {
		c.family().sup = s
	}
	c.pid = &actor.PID{Address: cellAddress, Id: id, RequestId: uint32(len(d.cells))}
	c.mailbox = mailbox{trace: d.trace, self: nameHash(id), invoker: c, loop: dispatcher}
	c.turn = c.drain
	d.cells = append(d.cells, c)
	c.actor = producer()
	c.SendSystemMessage(c.pid, started)
	return c.pid, nil
}

// The lifecycle messages, one of each, as protoactor's.
var (
	started    = &actor.Started{}
	stopping   = &actor.Stopping{}
	stopped    = &actor.Stopped{}
	restarting = &actor.Restarting{}
	stopMsg    = &actor.Stop{}
	restartMsg = &actor.Restart{}
	suspend    = &actor.SuspendMailbox{}
	resume     = &actor.ResumeMailbox{}
)

type cellState uint8

const (
	alive cellState = iota
	restartingState
	stoppingState
	stoppedState
)

// cell is one actor under direct dispatch: its mailbox is the
// simulator's, whose invoker the cell is.
type cell struct {
	mailbox
	d        *direct
	pid      *actor.PID
	parent   *actor.PID // nil at the root
	producer actor.Producer
	actor    actor.Actor
	kin      *kin // nil until the cell supervises, has children or fails
	state    cellState
}

// kin is what few cells have: the rank actors' supervision and children,
// and a failed actor's restarts. Links, millions in a simulation, have
// none until one fails.
type kin struct {
	sup      actors.Supervision // zero: protoactor's default strategies
	children []*actor.PID
	stats    *actor.RestartStatistics
}

// family returns c's kin, made on first use.
func (c *cell) family() *kin {
	if c.kin == nil {
		c.kin = &kin{}
	}
	return c.kin
}

// children returns c's children.
func (c *cell) children() []*actor.PID {
	if c.kin == nil {
		return nil
	}
	return c.kin.children
}

// strategies returns c's supervision.
func (c *cell) strategies() actors.Supervision {
	if c.kin == nil {
		return actors.Supervision{}
	}
	return c.kin.sup
}

// SendUserMessage, SendSystemMessage and Stop make a cell the Process its
// PID resolves to.
func (c *cell) SendUserMessage(_ *actor.PID, msg any)   { c.PostUserMessage(msg) }
func (c *cell) SendSystemMessage(_ *actor.PID, msg any) { c.PostSystemMessage(msg) }

// Stop stops the actor at pid: this one, as its Process, or any, as an
// actor.Context.
func (c *cell) Stop(pid *actor.PID) { c.d.sendSystem(pid, stopMsg) }

// InvokeUserMessage hands msg to the actor's Receive, as protoactor's
// does; InvokeSystemMessage and EscalateFailure make the cell its
// mailbox's MessageInvoker.
func (c *cell) InvokeUserMessage(msg any) {
	if c.state == stoppedState {
		return
	}
	if _, ok := msg.(*actor.PoisonPill); ok {
		c.Stop(c.pid)
		return
	}
	prev := c.d.msg
	c.d.msg = msg
	c.actor.Receive(c)
	c.d.msg = prev
}

func (c *cell) InvokeSystemMessage(msg any) {
	switch m := msg.(type) {
	case *actor.Started:
		c.InvokeUserMessage(m)
	case *actor.Stop:
		if c.state >= stoppingState {
			return
		}
		c.state = stoppingState
		c.InvokeUserMessage(stopping)
		c.stopChildren()
		c.restartOrTerminate()
	case *actor.Restart:
		c.state = restartingState
		c.InvokeUserMessage(restarting)
		c.stopChildren()
		c.restartOrTerminate()
	case *actor.Terminated:
		if i := slices.IndexFunc(c.children(), func(p *actor.PID) bool { return p.Equal(m.Who) }); i >= 0 {
			c.kin.children = slices.Delete(c.kin.children, i, i+1)
		}
		c.InvokeUserMessage(m)
		c.restartOrTerminate()
	case *actor.Failure:
		strategy := c.strategies().Children
		if strategy == nil {
			strategy = actor.DefaultSupervisorStrategy()
		}
		strategy.HandleFailure(c.d.sys, c, m.Who, m.RestartStats, m.Reason, m.Message)
	default:
		c.d.sys.Logger().Error("simulation: unknown system message", slog.Any("message", msg))
	}
}

func (c *cell) stopChildren() {
	for _, p := range slices.Backward(c.children()) {
		c.d.sendSystem(p, stopMsg)
	}
}

// restartOrTerminate finishes a restart or a stop once the children are
// gone.
func (c *cell) restartOrTerminate() {
	if len(c.children()) > 0 {
		return
	}
	switch c.state {
	case restartingState:
		c.state = alive
		c.actor = c.producer()
		c.SendSystemMessage(c.pid, resume)
		c.InvokeUserMessage(started)
	case stoppingState:
		c.d.cells[c.pid.RequestId] = nil
		c.InvokeUserMessage(stopped)
		if c.parent != nil {
			c.d.sendSystem(c.parent, &actor.Terminated{Who: c.pid})
		}
		c.state = stoppedState
		c.actor = nil
	}
}

// EscalateFailure, RestartChildren, StopChildren and ResumeChildren make a
// cell the Supervisor a strategy acts through.
func (c *cell) EscalateFailure(reason, msg any) {
	k := c.family()
	if k.stats == nil {
		k.stats = actor.NewRestartStatistics()
	}
	failure := &actor.Failure{Reason: reason, Who: c.pid, RestartStats: k.stats, Message: msg}
	c.SendSystemMessage(c.pid, suspend)
	if c.parent != nil {
		c.d.sendSystem(c.parent, failure)
		return
	}
	strategy := k.sup.Guardian
	if strategy == nil {
		strategy = actor.DefaultSupervisorStrategy()
	}
	strategy.HandleFailure(c.d.sys, c, c.pid, k.stats, reason, msg)
}

func (c *cell) RestartChildren(pids ...*actor.PID) {
	for _, p := range pids {
		c.d.sendSystem(p, restartMsg)
	}
}

func (c *cell) StopChildren(pids ...*actor.PID) {
	for _, p := range pids {
		c.d.sendSystem(p, stopMsg)
	}
}

func (c *cell) ResumeChildren(pids ...*actor.PID) {
	for _, p := range pids {
		c.d.sendSystem(p, resume)
	}
}

// The actor.Context a cell's actor receives: what the engine uses.

func (c *cell) Parent() *actor.PID              { return c.parent }
func (c *cell) Self() *actor.PID                { return c.pid }
func (c *cell) Actor() actor.Actor              { return c.actor }
func (c *cell) ActorSystem() *actor.ActorSystem { return c.d.sys }
func (c *cell) Logger() *slog.Logger            { return c.d.sys.Logger() }
func (c *cell) Children() []*actor.PID          { return c.children() }
func (c *cell) Message() any                    { return c.d.msg }
func (c *cell) Sender() *actor.PID              { return nil }

func (c *cell) MessageHeader() actor.ReadonlyMessageHeader { return nil }

func (c *cell) Send(pid *actor.PID, msg any) { c.d.send(pid, msg) }

func (c *cell) Spawn(props *actor.Props) *actor.PID {
	return c.SpawnPrefix(props, "")
}

func (c *cell) SpawnPrefix(props *actor.Props, prefix string) *actor.PID {
	pid, err := c.SpawnNamed(props, prefix+c.d.sys.ProcessRegistry.NextId())
	if err != nil {
		panic(err)
	}
	return pid
}

func (c *cell) SpawnNamed(props *actor.Props, name string) (*actor.PID, error) {
	c.d.spawning = c
	pid, err := c.d.sys.Root.SpawnNamed(props, c.pid.Id+"/"+name)
	c.d.spawning = nil
	if err != nil {
		return nil, err
	}
	k := c.family()
	k.children = append(k.children, pid)
	return pid, nil
}

// SpawnChild implements actors.ChildSpawner: SpawnPrefix without Props.
func (c *cell) SpawnChild(producer actor.Producer, dispatcher actor.Dispatcher, prefix string) *actor.PID {
	pid, err := c.d.spawn(c.pid.Id+"/"+prefix+c.d.sys.ProcessRegistry.NextId(), c.pid, producer, actors.Supervision{}, dispatcher)
	if err != nil {
		panic(err)
	}
	k := c.family()
	k.children = append(k.children, pid)
	return pid
}

func (c *cell) Poison(pid *actor.PID) { c.d.send(pid, &actor.PoisonPill{}) }

// unsupported is what a cell says to the parts of actor.Context the
// engine does not use.
func unsupported(what string) { panic("simulation: direct dispatch has no " + what) }

func (c *cell) ReceiveTimeout() time.Duration                       { unsupported("receive timeout"); return 0 }
func (c *cell) Respond(any)                                         { unsupported("Respond") }
func (c *cell) Stash()                                              { unsupported("Stash") }
func (c *cell) Watch(*actor.PID)                                    { unsupported("Watch") }
func (c *cell) Unwatch(*actor.PID)                                  { unsupported("Unwatch") }
func (c *cell) SetReceiveTimeout(time.Duration)                     { unsupported("receive timeout") }
func (c *cell) CancelReceiveTimeout()                               { unsupported("receive timeout") }
func (c *cell) Forward(*actor.PID)                                  { unsupported("Forward") }
func (c *cell) Request(*actor.PID, any)                             { unsupported("Request") }
func (c *cell) RequestWithCustomSender(*actor.PID, any, *actor.PID) { unsupported("Request") }
func (c *cell) StopFuture(*actor.PID) *actor.Future                 { unsupported("futures"); return nil }
func (c *cell) PoisonFuture(*actor.PID) *actor.Future               { unsupported("futures"); return nil }
func (c *cell) Receive(*actor.MessageEnvelope)                      { unsupported("envelopes") }
func (c *cell) Get(ctxext.ContextExtensionID) ctxext.ContextExtension {
	unsupported("extensions")
	return nil
}
func (c *cell) Set(ctxext.ContextExtension) { unsupported("extensions") }
func (c *cell) ReenterAfter(*actor.Future, func(any, error)) {
	unsupported("futures")
}
func (c *cell) RequestFuture(*actor.PID, any, time.Duration) *actor.Future {
	unsupported("futures")
	return nil
}
