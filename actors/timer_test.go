package actors_test

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/actorstest"
)

type ring struct{}

// timerTarget spawns an actor that passes what it receives to a channel.
func timerTarget(t *testing.T, rt *actors.Runtime) (*actor.PID, chan any) {
	t.Helper()
	got := make(chan any, 16)
	pid := rt.System().Root.Spawn(rt.Props(func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			if m, ok := ctx.Message().(ring); ok {
				got <- m
			}
		})
	}))
	return pid, got
}

func receive(t *testing.T, got chan any) {
	t.Helper()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the timer's message never came")
	}
}

// On a clock other than the wall's, an arming that was stopped or armed
// over delivers nothing the actor takes for its own.
func TestTimerTellsStaleMessagesApart(t *testing.T) {
	clock := actorstest.NewClock(time.Unix(0, 0))
	rt := actors.NewRuntime(nil)
	rt.Clock = clock
	defer rt.Shutdown()
	pid, got := timerTarget(t, rt)
	tm := rt.NewTimer(pid, ring{})

	tm.Arm(time.Second)
	clock.Advance(time.Second)
	receive(t, got)
	if !tm.Fired() || tm.Fired() {
		t.Fatal("a message that fired is the arming's, once")
	}

	tm.Arm(time.Second)
	tm.Stop()
	clock.Advance(time.Second)
	if clock.Pending() != 0 || tm.Fired() {
		t.Fatal("a stopped arming fired")
	}

	tm.Arm(time.Second)
	clock.Advance(time.Second)
	receive(t, got) // on its way when the timer is armed again
	tm.Arm(time.Second)
	if tm.Fired() {
		t.Fatal("the message of an earlier arming counts for the new one")
	}
	clock.Advance(time.Second)
	receive(t, got)
	if !tm.Fired() {
		t.Fatal("the new arming's message does not count")
	}
}

// On the wall clock, a timer fires, tells a stale message apart, and is
// armed again without allocating.
func TestTimerOnTheWallClock(t *testing.T) {
	rt := actors.NewRuntime(nil)
	defer rt.Shutdown()
	pid, got := timerTarget(t, rt)
	tm := rt.NewTimer(pid, ring{})

	tm.Arm(time.Millisecond)
	receive(t, got)
	tm.Arm(time.Hour)
	if tm.Fired() {
		t.Fatal("the message of an earlier arming counts for the new one")
	}
	tm.Stop()

	tm.Arm(time.Millisecond)
	receive(t, got)
	if !tm.Fired() {
		t.Fatal("a message that fired does not count")
	}
	if allocs := testing.AllocsPerRun(100, func() { tm.Arm(time.Hour); tm.Stop() }); allocs != 0 {
		t.Fatalf("arming allocates %v times", allocs)
	}
}
