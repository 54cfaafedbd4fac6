package supervisor

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/actorstest"
)

func TestBudgetBacksOffThenStops(t *testing.T) {
	b := budget{policy: Policy{MaxRestarts: 3, Window: time.Minute, Backoff: 10 * time.Millisecond, MaxBackoff: 25 * time.Millisecond}}
	t0 := time.Unix(0, 0)
	steps := []struct {
		at      time.Duration
		restart bool
		delay   time.Duration
	}{
		{0, true, 10 * time.Millisecond},
		{time.Second, true, 20 * time.Millisecond},
		{2 * time.Second, true, 25 * time.Millisecond},
		{3 * time.Second, false, 0},
	}
	for i, s := range steps {
		restart, delay := b.fail(t0.Add(s.at))
		if restart != s.restart || delay != s.delay {
			t.Fatalf("failure %d: got (%v, %v), want (%v, %v)", i, restart, delay, s.restart, s.delay)
		}
	}
}

func TestBudgetForgetsOldFailures(t *testing.T) {
	b := budget{policy: Policy{MaxRestarts: 1, Window: time.Second}}
	t0 := time.Unix(0, 0)
	for i := range 5 {
		if restart, _ := b.fail(t0.Add(time.Duration(i) * 2 * time.Second)); !restart {
			t.Fatalf("failure %d: stopped although earlier failures left the window", i)
		}
	}
	if restart, _ := b.fail(t0.Add(8*time.Second + time.Millisecond)); restart {
		t.Fatal("second failure within the window restarted")
	}
}

type panicky struct {
	starts *atomic.Int32
	seen   chan int
}

func (p *panicky) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.starts.Add(1)
	case int:
		if m < 0 {
			panic("asked to fail")
		}
		p.seen <- m
	}
}

// A child that panics is restarted only after the backoff elapses on the
// runtime's clock, keeps its mailbox, and is stopped once over budget.
func TestStrategyRestartsOnRuntimeClock(t *testing.T) {
	clock := actorstest.NewClock(time.Unix(0, 0))
	rt := actors.NewRuntime(nil)
	rt.Clock = clock
	defer rt.Shutdown()

	var starts atomic.Int32
	seen := make(chan int, 10)
	strategy := New(rt, Policy{MaxRestarts: 1, Backoff: time.Second})
	pid := rt.System().Root.Spawn(rt.SupervisedProps(func() actor.Actor { return &panicky{starts: &starts, seen: seen} },
		actors.Supervision{Guardian: strategy}))

	rt.System().Root.Send(pid, -1)
	rt.System().Root.Send(pid, 7)
	waitFor(t, func() bool { return clock.Pending() == 1 })
	select {
	case v := <-seen:
		t.Fatalf("message %d handled before the backoff elapsed", v)
	case <-time.After(20 * time.Millisecond):
	}
	clock.Advance(time.Second)
	if v := <-seen; v != 7 {
		t.Fatalf("after restart got %d, want 7", v)
	}
	if got := starts.Load(); got != 2 {
		t.Fatalf("started %d times, want 2", got)
	}

	rt.System().Root.Send(pid, -1) // second failure: over budget, stopped
	waitFor(t, func() bool { _, alive := rt.System().ProcessRegistry.Get(pid); return !alive })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
