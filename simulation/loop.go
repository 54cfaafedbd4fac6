package simulation

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/gocomms/gocomms/actors"
)

// Loop is the simulator's runtime: every actor task runs on the goroutine
// that calls Run, one at a time; virtual time moves only when no task is
// ready, straight to the next timer; and a source seeded by the run picks
// which ready task goes next, so that a seed is one interleaving of the
// actors, replayed bit for bit.
//
// Loop implements actor.Dispatcher, actors.AlarmClock and actors.Rand. It is not
// safe for concurrent use: everything that touches it runs on the loop.
type Loop struct {
	epoch  time.Time
	now    time.Duration
	ready  []func()
	timers timerQueue
	armed  uint64 // timers armed so far: ties at one instant fire in arming order
	rng    *rand.Rand
	tasks  int64 // tasks run
	// tick, if set, is called every tickEvery tasks: it may look, never
	// touch, so that it changes nothing of the run.
	tick func()
}

// tickEvery is how many tasks pass between calls of Loop.tick.
const tickEvery = 1 << 12

// NewLoop returns a loop at virtual time zero whose choices follow seed.
func NewLoop(seed uint64) *Loop {
	return &Loop{
		epoch: time.Unix(0, 0).UTC(),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// Schedule queues a task: an actor's mailbox asks for its turn this way.
func (l *Loop) Schedule(fn func()) { l.ready = append(l.ready, fn) }

// Throughput lets a mailbox drain without yielding: the loop is the only
// goroutine, so yielding would gain nothing.
func (l *Loop) Throughput() int { return math.MaxInt32 }

// Now is the virtual time, starting at the Unix epoch.
func (l *Loop) Now() time.Time { return l.epoch.Add(l.now) }

// Elapsed is the virtual time since the run began.
func (l *Loop) Elapsed() time.Duration { return l.now }

// Uint64 draws from the run's seeded source.
func (l *Loop) Uint64() uint64 { return l.rng.Uint64() }

// AfterFunc runs f on the loop once d of virtual time has passed.
func (l *Loop) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	t := &Timer{f: f}
	l.arm(armed{at: l.now + max(d, 0), do: t})
	return t.stop
}

// Alarm rings a on the loop once d of virtual time has passed, for good
// (actors.AlarmClock): the engine's timers arm it without a callback or
// a stop function per arming.
func (l *Loop) Alarm(d time.Duration, a actors.Alarm) {
	l.arm(armed{at: l.now + max(d, 0), do: a})
}

// At runs f on the loop at virtual time at (now, if at has passed). It
// cannot be cancelled, and costs no allocation of its own: the network
// arms one for every frame.
func (l *Loop) At(at time.Duration, f func()) {
	l.arm(armed{at: at, do: task(f)})
}

func (l *Loop) arm(a armed) {
	a.at = max(a.at, l.now)
	a.seq = l.armed
	l.armed++
	l.timers.push(a)
}

// Run runs tasks and timers until nothing is left or the next event lies
// beyond limit, and reports whether nothing is left.
func (l *Loop) Run(limit time.Duration) (idle bool) {
	for {
		for len(l.ready) > 0 {
			i := l.rng.IntN(len(l.ready))
			last := len(l.ready) - 1
			fn := l.ready[i]
			l.ready[i] = l.ready[last]
			l.ready[last] = nil
			l.ready = l.ready[:last]
			l.tasks++
			fn()
			if l.tick != nil && l.tasks%tickEvery == 0 {
				l.tick()
			}
		}
		next, ok := l.nextTimer()
		if !ok {
			return true
		}
		if next.at > limit {
			return false
		}
		l.timers.pop()
		l.now = next.at
		next.do.Ring()
	}
}

// nextTimer is the earliest timer not stopped, if any.
func (l *Loop) nextTimer() (armed, bool) {
	for len(l.timers) > 0 {
		a := l.timers[0]
		if t, ok := a.do.(*Timer); !ok || !t.stopped {
			return a, true
		}
		l.timers.pop()
	}
	return armed{}, false
}

// Timer is a callback armed on the loop that can be cancelled.
type Timer struct {
	f       func()
	stopped bool
	fired   bool
}

// armed is a timer in the queue: a cancellable Timer, a task, or an
// engine's timer. Its firing time and arming order sit in the queue
// itself: a run keeps hundreds of thousands of timers, and ordering them
// through pointers would touch one cold cache line per comparison.
type armed struct {
	at  time.Duration
	seq uint64
	do  actors.Alarm
}

// task is a plain function armed on the loop (At).
type task func()

func (f task) Ring() { f() }

// Ring fires the timer, which nextTimer found not stopped.
func (t *Timer) Ring() {
	t.fired = true
	t.f()
}

// stop cancels the timer and reports whether it had neither fired nor been
// stopped.
func (t *Timer) stop() bool {
	if t.fired || t.stopped {
		return false
	}
	t.stopped = true
	t.f = nil
	return true
}

// timerQueue is a 4-ary min-heap of timers by time, then arming order:
// a large simulation holds a timer for every link that watches its peer,
// and four children a node halve the levels a pop walks, each level's
// children side by side in memory. It is typed rather than built on
// container/heap, whose interface would box every timer pushed. Timers
// are ordered strictly (no two share an arming number), so any heap pops
// them in one order.
type timerQueue []armed

// arity is the children of a node of timerQueue.
const arity = 4

func (a armed) before(b armed) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *timerQueue) push(a armed) {
	h := append(*q, a)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / arity
		if !a.before(h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = a
	*q = h
}

// pop removes the earliest timer: the last one moves down from the root
// to where it is no later than its children.
func (q *timerQueue) pop() {
	h := *q
	last := len(h) - 1
	moving := h[last]
	h[last] = armed{}
	h = h[:last]
	i := 0
	for {
		first := arity*i + 1
		if first >= len(h) {
			break
		}
		least := first
		for c := first + 1; c < min(first+arity, len(h)); c++ {
			if h[c].before(h[least]) {
				least = c
			}
		}
		if !h[least].before(moving) {
			break
		}
		h[i] = h[least]
		i = least
	}
	if i < len(h) {
		h[i] = moving
	}
	*q = h
}
