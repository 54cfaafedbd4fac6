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

// A closed timer delivers nothing, even an arming whose deadline is still
// queued on an AlarmClock, which cannot cancel it: the simulator's loop,
// whose actor the timer would otherwise keep until then.
func TestTimerClosed(t *testing.T) {
	rt := actors.NewRuntime(nil)
	loop := &alarms{now: time.Unix(0, 0)}
	rt.Clock = loop
	defer rt.Shutdown()
	pid, got := timerTarget(t, rt)
	tm := rt.NewTimer(pid, ring{})
	tm.Arm(time.Second)
	tm.Close()
	loop.advance(time.Second)
	if loop.rang != 1 || tm.Fired() {
		t.Fatalf("the queued arming rang %d times; fired %v", loop.rang, tm.Fired())
	}
	rt.System().Root.Send(pid, ring{}) // a marker: nothing came before it
	receive(t, got)
	select {
	case m := <-got:
		t.Fatalf("the closed timer delivered %v", m)
	default:
	}
}

// alarms is an AlarmClock that rings what it was given once advanced
// past its deadline, and cannot cancel any.
type alarms struct {
	now   time.Time
	queue []alarm
	rang  int
}

type alarm struct {
	at time.Time
	a  actors.Alarm
}

func (c *alarms) Now() time.Time { return c.now }
func (c *alarms) Alarm(d time.Duration, a actors.Alarm) {
	c.queue = append(c.queue, alarm{c.now.Add(d), a})
}
func (c *alarms) AfterFunc(time.Duration, func()) func() bool { panic("alarms: no AfterFunc") }

func (c *alarms) advance(d time.Duration) {
	c.now = c.now.Add(d)
	for _, a := range c.queue {
		if !a.at.After(c.now) {
			c.rang++
			a.a.Ring()
		}
	}
}
