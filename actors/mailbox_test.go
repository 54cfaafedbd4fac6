package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// turns is a dispatcher whose turns run when the test says.
type turns struct{ pending []func() }

func (d *turns) Schedule(fn func()) { d.pending = append(d.pending, fn) }
func (d *turns) Throughput() int    { return 300 }

func (d *turns) run() {
	for i := 0; i < len(d.pending); i++ { // a turn may schedule another
		d.pending[i]()
	}
	d.pending = d.pending[:0]
}

// invoker records what the mailbox hands it.
type invoker struct {
	seen      []any
	panicOn   any
	escalated []any
}

func (i *invoker) InvokeSystemMessage(m any) { i.seen = append(i.seen, m) }
func (i *invoker) InvokeUserMessage(m any) {
	if m == i.panicOn {
		panic("boom")
	}
	i.seen = append(i.seen, m)
}
func (i *invoker) EscalateFailure(reason, m any) { i.escalated = append(i.escalated, reason, m) }

func newTestMailbox() (*mailbox, *turns, *invoker) {
	m := newMailbox().(*mailbox)
	d, inv := &turns{}, &invoker{}
	m.RegisterHandlers(inv, d)
	return m, d, inv
}

// System messages go first, user messages in order, each turn scheduled
// once however many messages wait.
func TestMailboxOrdersMessages(t *testing.T) {
	m, d, inv := newTestMailbox()
	for i := range 100 { // past the ring's first growth
		m.PostUserMessage(i)
	}
	stop := &actor.Stop{}
	m.PostSystemMessage(stop)
	if len(d.pending) != 1 {
		t.Fatalf("%d turns scheduled, want 1", len(d.pending))
	}
	d.run()
	if len(inv.seen) != 101 || inv.seen[0] != stop {
		t.Fatalf("saw %v, want the system message first", inv.seen)
	}
	for i, v := range inv.seen[1:] {
		if v != i {
			t.Fatalf("user message %d is %v", i, v)
		}
	}
	if m.UserMessageCount() != 0 {
		t.Fatalf("%d user messages left", m.UserMessageCount())
	}
}

// A suspended mailbox holds user messages until it resumes, and a panic is
// escalated with the message that caused it, the turn going on after.
func TestMailboxSuspendsAndEscalates(t *testing.T) {
	m, d, inv := newTestMailbox()
	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.PostUserMessage(1)
	d.run()
	if len(inv.seen) != 0 {
		t.Fatalf("a suspended mailbox handed over %v", inv.seen)
	}
	m.PostSystemMessage(&actor.ResumeMailbox{})
	d.run()
	if len(inv.seen) != 1 || inv.seen[0] != 1 {
		t.Fatalf("after resuming saw %v, want [1]", inv.seen)
	}
	inv.panicOn = 2
	m.PostUserMessage(2)
	m.PostUserMessage(3)
	d.run() // the panic ends the turn; the next message schedules another
	m.PostUserMessage(4)
	d.run()
	if len(inv.escalated) != 2 || inv.escalated[1] != 2 {
		t.Fatalf("escalated %v, want the panic with message 2", inv.escalated)
	}
	if want := []any{1, 3, 4}; len(inv.seen) != 3 || inv.seen[1] != 3 || inv.seen[2] != 4 {
		t.Fatalf("saw %v, want %v", inv.seen, want)
	}
}

// Posting and handling a message allocates nothing once the rings have
// grown.
func TestMailboxAllocatesNothing(t *testing.T) {
	m, d, inv := newTestMailbox()
	msg, sys := &struct{ int }{}, &actor.Stop{}
	allocs := testing.AllocsPerRun(100, func() {
		m.PostUserMessage(msg)
		m.PostSystemMessage(sys)
		d.run()
		inv.seen = inv.seen[:0]
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per message", allocs)
	}
}
