package devcomm

import (
	"time"

	"github.com/gocomms/gocomms/commerr"
)

// stage mirrors j's tensors in pinned memory, downloads them after the
// caller's work, and hands the host the operation on the copies once the
// device has them.
func (b *Backend) stage(j *job) error {
	total, err := j.m.build(j.op)
	if err != nil {
		return commerr.Invalid("%v", err)
	}
	var buf []byte
	if total > 0 {
		if j.buf, err = b.pool.get(total); err != nil {
			return err
		}
		buf = j.buf.Bytes()
	}
	if err := j.m.place(j.op, buf); err != nil {
		return commerr.Invalid("%v", err)
	}
	if err := b.waitCaller(j); err != nil {
		return err
	}
	if err := j.m.download(b.s); err != nil {
		return err
	}
	if err := b.record(j); err != nil {
		return err
	}
	if err := await(j.end, time.Time{}); err != nil {
		return err
	}
	b.mu.Lock()
	b.hosted++
	b.mu.Unlock()
	j.start = time.Now()
	cancel := b.host.Issue(&j.m.op, hostCompletion{j})
	j.mu.Lock()
	if cancel != nil {
		j.cancel = cancel
	}
	j.mu.Unlock()
	return nil
}

// hostCompletion passes the host's word on.
type hostCompletion struct{ j *job }

func (c hostCompletion) Started() { c.j.done.Started() }

func (c hostCompletion) Finished(err error) {
	c.j.err = err
	c.j.b.ending.push(c.j)
}

// upload queues the copies back of what j's host operation wrote, and
// records its end after them.
func (b *Backend) upload(j *job) error {
	if err := j.m.upload(b.s); err != nil {
		return err
	}
	return j.end.Record(b.s)
}
