package nccl

import (
	"fmt"
	"slices"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
)

// An operation passes through two goroutines of its communicator: the
// launcher issues its NCCL calls on the communicator's stream, one
// operation at a time, in order, since NCCL's calls must reach every rank
// in the same order; the watcher then finishes operations, in order, as
// their end events complete, and fails them all when one times out or
// NCCL reports an asynchronous error. The launcher has a goroutine of its
// own because an NCCL call may block (for peers, say), which Issue must
// not.

// job is an operation issued and not finished, or a call on the host to
// make in order with the operations (ncclCommSplit).
type job struct {
	op       *backend.Op
	done     backend.Completion
	deadline time.Time
	state    jobState
	// start, recorded on the caller's stream, orders the operation after
	// the caller's work; end, recorded after the operation's, tells when
	// it is done.
	start, end *cuda.Event
	// host, for a call on the host, is called by the launcher with the
	// communicator's error, if any, instead of issuing anything.
	host func(err error)
}

type jobState int

const (
	jobWaiting   jobState = iota // for the launcher
	jobLaunching                 // being issued: the launcher finishes it if that fails
	jobQueued                    // on the stream, for the watcher
)

// Issue queues op for the launcher.
func (c *comm) Issue(op *backend.Op, done backend.Completion) func(error) {
	j := &job{op: op, done: done, deadline: time.Now().Add(op.Timeout)}
	c.unfinished.Add(1)
	if err := c.enqueue(j); err != nil {
		go c.finish(j, err)
		return func(error) {}
	}
	return func(err error) { c.cancel(j, err) }
}

// enqueue adds j to the queue, or returns why the communicator takes no
// more.
func (c *comm) enqueue(j *job) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return c.err
	case c.closing:
		return commerr.ErrFinalized
	}
	c.queue = append(c.queue, j)
	wake(c.launchWake)
	wake(c.watchWake)
	return nil
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// cancel fails j, unless it has finished, by aborting the communicator:
// NCCL cannot withdraw one operation, which other ranks may have issued.
func (c *comm) cancel(j *job, err error) {
	c.mu.Lock()
	pending := false
	for _, q := range c.queue {
		pending = pending || q == j
	}
	c.mu.Unlock()
	if pending {
		c.fail(fmt.Errorf("%w: nccl: %s cancelled, which aborts the communicator: %w", commerr.ErrAborted, j.op.Name, err))
	}
}

// launcher issues the queued jobs, in order.
func (c *comm) launcher() {
	defer c.goroutines.Done()
	for {
		c.mu.Lock()
		var j *job
		for _, q := range c.queue {
			if q.state == jobWaiting {
				j = q
				break
			}
		}
		if j == nil {
			c.mu.Unlock()
			select {
			case <-c.launchWake:
				continue
			case <-c.stop:
				return
			}
		}
		j.state = jobLaunching
		err := c.err
		c.mu.Unlock()
		if j.host != nil {
			j.host(err)
			c.remove(j)
			continue
		}
		if err == nil {
			err = c.launch(j)
		}
		c.mu.Lock()
		if c.err != nil {
			err = c.err
		}
		if err == nil {
			j.state = jobQueued
			wake(c.watchWake)
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		c.remove(j)
		c.finish(j, err)
	}
}

// launch issues j's calls on the stream, after the caller's work, and
// records its end.
func (c *comm) launch(j *job) error {
	calls, red, err := c.plan(j.op)
	if err != nil {
		return err
	}
	if j.end, err = c.event(); err != nil {
		return err
	}
	if s := j.op.Stream; s != nil {
		if j.start, err = c.event(); err != nil {
			return err
		}
		if err := j.start.Record(s); err != nil {
			return fmt.Errorf("nccl: ordering after the caller's stream: %w", err)
		}
		if err := c.stream.Wait(j.start); err != nil {
			return fmt.Errorf("nccl: ordering after the caller's stream: %w", err)
		}
	}
	c.callMu.RLock()
	if c.h == nil {
		err = c.failure()
	} else {
		err = sysRun(c.cu, c.h, c.stream.Handle(), calls, red.op, red.premul, red.scalar)
	}
	c.callMu.RUnlock()
	if err != nil {
		return err
	}
	if err := j.end.Record(c.stream); err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	if q, ok := j.done.(backend.Queued); ok {
		q.Queued(j.end)
	}
	j.done.Started()
	return nil
}

// event returns an event, a spare one where there is one.
func (c *comm) event() (*cuda.Event, error) {
	c.mu.Lock()
	if n := len(c.events); n > 0 {
		e := c.events[n-1]
		c.events = c.events[:n-1]
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	e, err := c.ctx.NewEvent()
	if err != nil {
		return nil, fmt.Errorf("nccl: %w", err)
	}
	return e, nil
}

// watcher finishes the queued operations as their work completes, and
// fails them once one is late or NCCL reports an error.
func (c *comm) watcher() {
	defer c.goroutines.Done()
	const least, most = 10 * time.Microsecond, time.Millisecond
	pause := least
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			select {
			case <-c.watchWake:
				pause = least
				continue
			case <-c.stop:
				return
			}
		}
		now := time.Now()
		var late, head *job
		for _, j := range c.queue {
			if j.host == nil && j.op.Timeout > 0 && now.After(j.deadline) {
				late = j
				break
			}
		}
		if j := c.queue[0]; j.state == jobQueued {
			head = j
		}
		c.mu.Unlock()
		if late != nil {
			c.fail(fmt.Errorf("%w: nccl: %s #%d did not complete in NCCL within %v; the communicator was aborted",
				commerr.ErrTimeout, late.op.Name, late.op.Seq, late.op.Timeout))
			continue
		}
		if head != nil {
			ok, err := head.end.Query()
			if err != nil {
				c.fail(fmt.Errorf("%w: nccl: the communicator's stream failed: %w", commerr.ErrAborted, err))
				continue
			}
			if ok {
				c.remove(head)
				c.finish(head, nil)
				pause = least
				continue
			}
		}
		if err := c.asyncError(); err != nil {
			c.fail(fmt.Errorf("%w: %w", commerr.ErrPeerFailed, err))
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, most)
	}
}

// asyncError returns NCCL's asynchronous error, if any.
func (c *comm) asyncError() error {
	c.callMu.RLock()
	defer c.callMu.RUnlock()
	if c.h == nil {
		return nil
	}
	return sysAsyncError(c.cu, c.h)
}

// fail ends the communicator with err, unless it has ended already:
// aborts it, and fails every operation but the one being launched, which
// the launcher fails.
func (c *comm) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		c.log.Warn("nccl: communicator aborted", "comm", c.name, "rank", c.rank, "err", err)
	}
	err = c.err
	c.mu.Unlock()
	c.callMu.Lock()
	if c.h != nil {
		if e := sysAbort(c.cu, c.h); e != nil {
			c.log.Warn("nccl: abort", "comm", c.name, "rank", c.rank, "err", e)
		}
		c.h = nil
	}
	c.callMu.Unlock()
	c.mu.Lock()
	var ended []*job
	c.queue = slices.DeleteFunc(c.queue, func(j *job) bool {
		if j.state == jobLaunching {
			return false
		}
		ended = append(ended, j)
		return true
	})
	c.mu.Unlock()
	for _, j := range ended {
		if j.host != nil {
			j.host(err)
			continue
		}
		c.finish(j, err)
	}
}

// remove takes j off the queue.
func (c *comm) remove(j *job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.queue {
		if q == j {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			return
		}
	}
}

// finish reports j's end, off the queue, and keeps its events for later
// operations.
func (c *comm) finish(j *job, err error) {
	if err != nil {
		err = c.opError(j.op, err)
	}
	j.done.Finished(err)
	c.mu.Lock()
	for _, e := range []*cuda.Event{j.start, j.end} {
		if e != nil && !c.closing {
			c.events = append(c.events, e)
		} else if e != nil {
			_ = e.Close()
		}
	}
	c.mu.Unlock()
	c.unfinished.Done()
}
