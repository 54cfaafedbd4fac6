package devcomm

import (
	"sync"

	"github.com/gocomms/gocomms/internal/fifo"
)

// queue is an unbounded queue of jobs with one reader: a push never
// blocks, which Issue and the host's Finished must not.
type queue struct {
	mu    sync.Mutex
	jobs  fifo.Queue[*job]
	ready chan struct{} // holds a token while jobs may be waiting
}

func (q *queue) init() { q.ready = make(chan struct{}, 1) }

func (q *queue) push(j *job) {
	q.mu.Lock()
	q.jobs.Push(j)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the oldest job, waiting for one, or false once stop is
// closed.
func (q *queue) pop(stop <-chan struct{}) (*job, bool) {
	for {
		q.mu.Lock()
		j, ok := q.jobs.Pop()
		q.mu.Unlock()
		if ok {
			return j, true
		}
		select {
		case <-q.ready:
		case <-stop:
			return nil, false
		}
	}
}
