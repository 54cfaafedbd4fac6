package simulation

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"time"
)

// Loop is the simulator's runtime: every actor task runs on the goroutine
// that calls Run, one at a time; virtual time moves only when no task is
// ready, straight to the next timer; and a source seeded by the run picks
// which ready task goes next, so that a seed is one interleaving of the
// actors, replayed bit for bit.
//
// Loop implements actor.Dispatcher, actors.Clock and actors.Rand. It is not
// safe for concurrent use: everything that touches it runs on the loop.
type Loop struct {
	epoch  time.Time
	now    time.Duration
	ready  []func()
	timers timerQueue
	armed  uint64 // timers armed so far: ties at one instant fire in arming order
	rng    *rand.Rand
	tasks  int64 // tasks run
}

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
	t := l.At(l.now+max(d, 0), f)
	return t.stop
}

// At runs f on the loop at virtual time at (now, if at has passed).
func (l *Loop) At(at time.Duration, f func()) *Timer {
	t := &Timer{at: max(at, l.now), seq: l.armed, f: f}
	l.armed++
	heap.Push(&l.timers, t)
	return t
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
		}
		t := l.nextTimer()
		if t == nil {
			return true
		}
		if t.at > limit {
			return false
		}
		heap.Pop(&l.timers)
		l.now = t.at
		t.fired = true
		t.f()
	}
}

// nextTimer is the earliest timer not stopped, or nil.
func (l *Loop) nextTimer() *Timer {
	for len(l.timers) > 0 {
		if t := l.timers[0]; !t.stopped {
			return t
		}
		heap.Pop(&l.timers)
	}
	return nil
}

// Timer is a callback armed on the loop.
type Timer struct {
	at      time.Duration
	seq     uint64
	f       func()
	stopped bool
	fired   bool
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

// timerQueue orders timers by time, then by arming order.
type timerQueue []*Timer

func (q timerQueue) Len() int { return len(q) }

func (q timerQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *timerQueue) Push(x any) { *q = append(*q, x.(*Timer)) }

func (q *timerQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}
