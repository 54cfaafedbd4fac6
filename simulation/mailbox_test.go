package simulation

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// recorder keeps the user messages it is handed, and panics on "boom".
type recorder struct{ got *[]string }

func (r recorder) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case string:
		if m == "boom" {
			panic("boom")
		}
		*r.got = append(*r.got, m)
	case *actor.Restarting:
		*r.got = append(*r.got, "restarting")
	}
}

func TestMailboxOrdersAndSurvivesPanics(t *testing.T) {
	loop := NewLoop(1)
	trace := newTrace(loop)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer sys.Shutdown()
	var got []string
	props := actor.PropsFromProducer(func() actor.Actor { return recorder{&got} },
		actor.WithDispatcher(loop), actor.WithMailbox(trace.mailboxes()))
	pid := sys.Root.Spawn(props)
	for _, m := range []string{"a", "b", "boom", "c"} {
		sys.Root.Send(pid, m)
	}
	if !loop.Run(0) {
		t.Fatal("the loop did not go idle")
	}
	// The panic loses "boom" alone: the supervisor restarts the actor,
	// and the mailbox hands over what was queued behind it.
	if want := []string{"a", "b", "restarting", "c"}; !slices.Equal(got, want) {
		t.Fatalf("handed %q, want %q", got, want)
	}
	if trace.Events() < 5 {
		t.Fatalf("traced %d events, want every message handed over", trace.Events())
	}
}

func TestMailboxHoldsUserMessagesWhileSuspended(t *testing.T) {
	loop := NewLoop(1)
	m := newTrace(loop).mailboxes()().(*mailbox)
	var got []any
	m.RegisterHandlers(invokerFunc(func(msg any) { got = append(got, msg) }), loop)
	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.PostUserMessage("held")
	loop.Run(0)
	if len(got) != 0 || m.UserMessageCount() != 1 {
		t.Fatalf("a suspended mailbox handed over %v, holding %d", got, m.UserMessageCount())
	}
	m.PostSystemMessage(&actor.ResumeMailbox{})
	loop.Run(0)
	if len(got) != 1 || got[0] != "held" || m.UserMessageCount() != 0 {
		t.Fatalf("a resumed mailbox handed over %v, holding %d", got, m.UserMessageCount())
	}
}

// invokerFunc hands every message to one function.
type invokerFunc func(any)

func (f invokerFunc) InvokeSystemMessage(m any) { f(m) }
func (f invokerFunc) InvokeUserMessage(m any)   { f(m) }
func (f invokerFunc) EscalateFailure(any, any)  {}
