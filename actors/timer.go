package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Timer delivers msg to an actor once a delay has passed (or calls a
// function: NewTimerFunc), and is armed again and again by its owner, for
// one delay at a time. On the real clock it keeps one time.Timer and
// resets it, so arming allocates nothing; on an AlarmClock each arming is
// one alarm, with no callback of its own; other clocks arm with AfterFunc
// each time.
//
// A delivery can outlive Stop (it was on its way), so the actor asks
// Fired, on receiving msg, whether it comes from the current arming.
type Timer struct {
	rt *Runtime
	// pid and msg are what the timer delivers; with no pid, msg is the
	// function it calls. Kept apart, not bound in a closure: a simulation
	// keeps millions of timers.
	pid *actor.PID
	msg any

	mu    sync.Mutex // the actor against the clock's callbacks
	gen   uint64     // armings so far
	armed bool       // armed, and not stopped or reported fired since
	sent  bool       // the current arming's message is on its way
	// deadline is when the current arming fires, on the real clock and
	// an AlarmClock, as the time since clockBase: a simulation keeps
	// millions of timers, and a time.Time is three words.
	deadline time.Duration
	wall     *time.Timer
	stop     func() bool // the current arming's, on other clocks
}

// clockBase is what a Timer counts its deadline from. Only differences
// from it are compared, so its value changes no outcome.
var clockBase = time.Now() // nondeterministic: a reference point only

// since is now on clock, as the time since clockBase.
func since(clock Clock) time.Duration { return clock.Now().Sub(clockBase) }

// An AlarmClock rings a once d has passed on it, with no way to cancel
// the call: a Timer on it checks its own deadline when rung, so that an
// arming costs no callback and no stop function of its own, which a
// simulation of millions of links would keep. Its Now reads at least the
// deadline when a rings. The simulator's loop is one.
type AlarmClock interface {
	Clock
	Alarm(d time.Duration, a Alarm)
}

// An Alarm is what an AlarmClock rings: a Timer.
type Alarm interface{ Ring() }

// NewTimer returns a timer that delivers msg to pid, not yet armed.
func (rt *Runtime) NewTimer(pid *actor.PID, msg any) *Timer {
	return &Timer{rt: rt, pid: pid, msg: msg}
}

// NewTimerFunc returns a timer that calls f, from the clock's goroutine,
// not yet armed: f must not block, and its caller asks Fired, as an
// actor would on receiving the message.
func (rt *Runtime) NewTimerFunc(f func()) *Timer {
	return &Timer{rt: rt, msg: f}
}

// Arm stops the timer and arms it to deliver its message after d.
func (t *Timer) Arm(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
	t.gen++
	t.armed, t.sent = true, false
	switch clock := t.rt.Clock.(type) {
	case wallClock:
		t.deadline = since(clock) + d
		if t.wall == nil {
			t.wall = time.AfterFunc(d, t.Ring) // nondeterministic: the real clock
		} else {
			t.wall.Reset(d) // nondeterministic: the real clock
		}
	case AlarmClock:
		t.deadline = since(clock) + d
		clock.Alarm(d, t)
	default:
		gen := t.gen
		t.stop = clock.AfterFunc(d, func() { t.fire(gen) })
	}
}

// Stop disarms the timer.
func (t *Timer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
}

func (t *Timer) stopLocked() {
	if !t.armed {
		return
	}
	t.armed = false
	if t.wall != nil {
		t.wall.Stop()
	} else if t.stop != nil {
		t.stop()
		t.stop = nil
	}
}

// Close stops the timer for good and lets go of what it delivers, and
// to whom: an AlarmClock's queue keeps an arming it cannot cancel until
// its deadline, and a simulation's stopped actors, each with its state,
// would stay reachable from their timers until then.
func (t *Timer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
	t.pid, t.msg = nil, nil
}

// Fired reports whether the message just received is the current
// arming's, and disarms the timer if so: a message of an earlier arming,
// or one that came after Stop, is stale.
func (t *Timer) Fired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.armed || !t.sent {
		return false
	}
	t.armed = false
	return true
}

// Ring is the real clock's and an AlarmClock's call (Alarm). A call of
// an earlier arming may come after the timer was armed again, and cannot
// tell from its arguments: before the current deadline, it is that one;
// at or after it, the current arming is due anyway.
func (t *Timer) Ring() {
	now := since(t.rt.Clock)
	t.mu.Lock()
	send := t.armed && !t.sent && now >= t.deadline
	t.sent = t.sent || send
	pid, msg := t.pid, t.msg
	t.mu.Unlock()
	if send { // outside the lock: a dispatcher may run the actor's turn at once
		t.deliver(pid, msg)
	}
}

func (t *Timer) fire(gen uint64) {
	t.mu.Lock()
	send := t.armed && !t.sent && gen == t.gen
	t.sent = t.sent || send
	pid, msg := t.pid, t.msg
	t.mu.Unlock()
	if send {
		t.deliver(pid, msg)
	}
}

// deliver sends msg to pid, or calls msg, a function, where there is no
// pid: what the timer held when it fired, which Close may have let go of
// since.
func (t *Timer) deliver(pid *actor.PID, msg any) {
	switch {
	case pid != nil:
		t.rt.system.Root.Send(pid, msg)
	case msg != nil:
		msg.(func())()
	}
}
