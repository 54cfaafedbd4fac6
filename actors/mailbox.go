package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gocomms/gocomms/internal/fifo"
)

// mailbox is the real runtime's mailbox: protoactor's unbounded mailbox
// without its steady-state allocations. protoactor's allocates a queue node
// per system message and a closure each time an idle mailbox is scheduled;
// this one keeps both queues in rings that grow and never shrink, and hands
// the dispatcher one turn function made at creation. Its behaviour is the
// same: system messages first, user messages held while suspended, a
// panic escalated to the actor's supervisor, Throughput messages a turn
// before it yields.
type mailbox struct {
	mu     sync.Mutex
	system fifo.Queue[any]
	user   fifo.Queue[any]

	scheduled atomic.Bool  // a turn is scheduled or running
	sysCount  atomic.Int32 // the queues' lengths, changed with them
	userCount atomic.Int32
	suspended atomic.Bool

	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
	turn       func() // m.process, bound once
}

func newMailbox() actor.Mailbox {
	m := &mailbox{}
	m.turn = m.process
	return m
}

func (m *mailbox) PostUserMessage(msg any) {
	// As protoactor's: a batch's messages are posted one by one, and then
	// the batch itself.
	if batch, ok := msg.(actor.MessageBatch); ok {
		for _, b := range batch.GetMessages() {
			m.PostUserMessage(b)
		}
	}
	if env, ok := msg.(*actor.MessageEnvelope); ok {
		if batch, ok := env.Message.(actor.MessageBatch); ok {
			for _, b := range batch.GetMessages() {
				m.PostUserMessage(b)
			}
		}
	}
	if msg == nil {
		return // a queue's nil means empty
	}
	m.mu.Lock()
	m.user.Push(msg)
	m.userCount.Add(1)
	m.mu.Unlock()
	m.schedule()
}

func (m *mailbox) PostSystemMessage(msg any) {
	if msg == nil {
		return
	}
	m.mu.Lock()
	m.system.Push(msg)
	m.sysCount.Add(1)
	m.mu.Unlock()
	m.schedule()
}

func (m *mailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
}

func (m *mailbox) Start() {}

func (m *mailbox) UserMessageCount() int { return int(m.userCount.Load()) }

func (m *mailbox) schedule() {
	if m.scheduled.CompareAndSwap(false, true) {
		m.dispatcher.Schedule(m.turn)
	}
}

// process is one turn: it runs until both queues are empty (or the user
// queue is held), and takes the turn up again if a message came meanwhile.
func (m *mailbox) process() {
	for {
		m.run()
		m.scheduled.Store(false)
		sys, user := m.sysCount.Load(), m.userCount.Load()
		if sys == 0 && (m.suspended.Load() || user == 0) {
			return
		}
		if !m.scheduled.CompareAndSwap(false, true) {
			return // another turn took them
		}
	}
}

func (m *mailbox) run() {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	for i, t := 0, m.dispatcher.Throughput(); ; i++ {
		if i > t {
			i = 0
			runtime.Gosched()
		}
		if msg = m.pop(&m.system, &m.sysCount); msg != nil {
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended.Store(true)
			case *actor.ResumeMailbox:
				m.suspended.Store(false)
			default:
				m.invoker.InvokeSystemMessage(msg)
			}
			continue
		}
		if m.suspended.Load() {
			return
		}
		if msg = m.pop(&m.user, &m.userCount); msg == nil {
			return
		}
		m.invoker.InvokeUserMessage(msg)
	}
}

// pop takes the oldest message of q, or returns nil (no message is nil).
func (m *mailbox) pop(q *fifo.Queue[any], count *atomic.Int32) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := q.Pop()
	if ok {
		count.Add(-1)
	}
	return v
}
