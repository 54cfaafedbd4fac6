package simulation

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/gocomms/gocomms/internal/fifo"
)

// mailbox is every simulated actor's mailbox: protoactor's actor context
// is its invoker under protoactor's dispatch, the actor's cell under the
// simulator's own (dispatch.go). Its turns run on the loop,
// one goroutine, so it needs none of the default mailbox's atomics; it
// keeps one turn function for its whole life, where the default one hands
// the dispatcher a new method value on every wake; and it records each
// message in the trace as it hands it over, so that no receiver
// middleware has to wrap every message in an envelope.
//
// It keeps the default mailbox's order: system messages first, user
// messages only while not suspended, one turn drains everything, and a
// panic in a handler is escalated to the supervisor. Message batches are
// not unpacked: the engine sends none.
type mailbox struct {
	trace     *Trace
	self      uint64 // the hash of the actor's name
	invoker   actor.MessageInvoker
	loop      actor.Dispatcher
	turn      func()
	system    fifo.Queue[any]
	user      fifo.Queue[any]
	scheduled bool
	suspended bool
}

// mailboxes makes the mailboxes of one run.
func (t *Trace) mailboxes() actor.MailboxProducer {
	return func() actor.Mailbox {
		m := &mailbox{trace: t}
		m.turn = m.drain
		return m
	}
}

func (m *mailbox) RegisterHandlers(invoker actor.MessageInvoker, loop actor.Dispatcher) {
	m.invoker, m.loop = invoker, loop
	if c, ok := invoker.(interface{ Self() *actor.PID }); ok {
		m.self = nameHash(c.Self().Id)
	}
}

func (m *mailbox) Start() {}

func (m *mailbox) UserMessageCount() int { return m.user.Len() }

func (m *mailbox) PostUserMessage(msg any) {
	m.user.Push(msg)
	m.schedule()
}

func (m *mailbox) PostSystemMessage(msg any) {
	m.system.Push(msg)
	m.schedule()
}

func (m *mailbox) schedule() {
	if !m.scheduled {
		m.scheduled = true
		m.loop.Schedule(m.turn)
	}
}

// drain is one turn: it hands over messages until none can be, going on
// past a handler that panicked once the panic is escalated.
func (m *mailbox) drain() {
	for !m.run() {
	}
	m.scheduled = false
}

// run hands over messages until none can be, and reports false if a
// handler panicked.
func (m *mailbox) run() (finished bool) {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
			finished = false
		}
	}()
	for {
		var ok bool
		if msg, ok = m.system.Pop(); ok {
			if m.system.Len() == 0 {
				// System messages are rare (a spawn, a stop, a failure):
				// a million idle actors keep no buffer for them.
				m.system = fifo.Queue[any]{}
			}
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended = true
			case *actor.ResumeMailbox:
				m.suspended = false
			default:
				m.trace.add(m.self, msg)
				m.invoker.InvokeSystemMessage(msg)
			}
			continue
		}
		if m.suspended {
			return true
		}
		if msg, ok = m.user.Pop(); !ok {
			return true
		}
		m.trace.add(m.self, msg)
		m.invoker.InvokeUserMessage(msg)
	}
}
