package devcomm

import "sync"

// fifo is an unbounded queue of jobs with one reader: a push never
// blocks, which Issue and the host's Finished must not.
type fifo struct {
	mu    sync.Mutex
	jobs  []*job
	ready chan struct{} // holds a token while jobs may be waiting
}

func (q *fifo) init() { q.ready = make(chan struct{}, 1) }

func (q *fifo) push(j *job) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the oldest job, waiting for one, or false once stop is
// closed.
func (q *fifo) pop(stop <-chan struct{}) (*job, bool) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.jobs[0] = nil
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			return j, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-stop:
			return nil, false
		}
	}
}
