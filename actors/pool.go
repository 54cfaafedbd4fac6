package actors

import (
	"runtime"
	"sync"
)

// pool is the real runtime's dispatcher: mailbox turns run on long-lived
// worker goroutines. protoactor's default dispatcher starts a goroutine
// for every wake-up of an idle mailbox; each begins with a small stack and
// copies it as the actor's handler grows it, which took 40% of the CPU
// time of an 8-byte all-reduce. A worker's stack stays grown.
//
// A turn goes to a worker only if one is idle, waiting, at that moment;
// else it gets a goroutine of its own, as with the default dispatcher.
// Nothing queues behind a busy worker, so a turn never waits on another,
// even one that blocks, and a burst of wake-ups cannot deadlock.
type pool struct {
	tasks chan func() // unbuffered: a send is a hand-off to an idle worker
	done  chan struct{}
	once  sync.Once
}

func newPool() *pool {
	p := &pool{tasks: make(chan func()), done: make(chan struct{})}
	for range max(8, 4*runtime.GOMAXPROCS(0)) {
		go p.work() // nondeterministic: the real runtime's workers
	}
	return p
}

func (p *pool) work() {
	for {
		select {
		case fn := <-p.tasks:
			fn()
		case <-p.done:
			return
		}
	}
}

// Schedule runs fn on an idle worker, or on a goroutine of its own when
// none is idle.
func (p *pool) Schedule(fn func()) {
	select {
	case p.tasks <- fn:
	default:
		go fn() // nondeterministic: the real runtime's overflow
	}
}

// Throughput bounds how many messages one mailbox turn handles before it
// yields its worker; protoactor's default.
func (p *pool) Throughput() int { return 300 }

// stop ends the workers once they finish their turns; turns scheduled
// later run on goroutines of their own.
func (p *pool) stop() { p.once.Do(func() { close(p.done) }) }
