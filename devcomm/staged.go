package devcomm

import (
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
)

// stage mirrors j's tensors in pinned memory, downloads them after the
// caller's work, and hands the host the operation on the copies once the
// device has them; a large one in pieces that pipeline.
func (b *Backend) stage(j *job) error {
	if err := b.waitCaller(j); err != nil {
		return err
	}
	if ops := cut(j.op, b.chunk); ops != nil {
		return b.stagePieces(j, ops)
	}
	if err := b.download(j); err != nil {
		return err
	}
	return b.hand(j)
}

// download mirrors j's tensors in pinned memory and queues their copy
// there, recording j.end after it.
func (b *Backend) download(j *job) error {
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
	if err := j.m.download(b.s); err != nil {
		return err
	}
	return b.record(j)
}

// hand gives the host j's operation on the copies once they are there.
func (b *Backend) hand(j *job) error {
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

// pieces is a large staged operation cut into pieces that pipeline: while
// the host moves one, the next downloads and the one before uploads. The
// operation ends once every piece has.
type pieces struct {
	j    *job
	left int   // pieces not ended
	err  error // the first piece's error
}

// cut returns op as pieces in order, or nil where it is small or not cut
// so. A collective's buffers are lists of blocks (algorithms.Spec), and
// every element moves or is reduced on its own, so piece k of every
// collective is elements [k·per, (k+1)·per) of every block, per being
// chunk bytes of elements: of each rank's input and output alike, so
// that the pieces are collectives of their own whose blocks still match
// across ranks. A block that ends before a piece is empty in it. Every
// rank cuts alike, from the counts all of them share; all-to-all's own
// counts (Send, Recv) are each rank's alone, so it is cut only in its
// uniform forms, whose Counts every rank shares.
func cut(op *backend.Op, chunk int) []*backend.Op {
	if chunk <= 0 || op.Kind == 0 || op.Schedule != nil || op.P2P != nil || op.Send != nil {
		return nil
	}
	n := longest(op.Counts)
	if n == 0 {
		return nil
	}
	per := max(chunk/op.DType.Size(), 1)
	if n <= per {
		return nil
	}
	var ops []*backend.Op
	for lo := 0; lo < n; lo += per {
		piece := *op
		piece.Counts = column(op.Counts, lo, per)
		piece.Inputs = narrow(op.Inputs, lo, per)
		piece.Outputs = narrow(op.Outputs, lo, per)
		ops = append(ops, &piece)
	}
	return ops
}

// column returns how many of each count's elements lie in [lo, lo+per).
func column(counts []int, lo, per int) []int {
	out := make([]int, len(counts))
	for i, c := range counts {
		out[i] = min(max(c-lo, 0), per)
	}
	return out
}

// narrow returns the elements of each of ts that lie in [lo, lo+per).
func narrow(ts []*tensor.Tensor, lo, per int) []*tensor.Tensor {
	if ts == nil {
		return nil
	}
	out := make([]*tensor.Tensor, len(ts))
	for i, t := range ts {
		if t == nil {
			continue
		}
		n := t.Numel()
		from := min(lo, n)
		out[i], _ = t.Narrow(from, min(n-from, per)) // within t, as cut's counts say
	}
	return out
}

// stagePieces queues every piece's download at once, then hands each to
// the host as soon as its copy is there, without waiting for the pieces
// before it to end.
func (b *Backend) stagePieces(j *job, ops []*backend.Op) error {
	ps := &pieces{j: j, left: len(ops)}
	b.pieces.Add(uint64(len(ops)))
	jobs := make([]*job, len(ops))
	for i, op := range ops {
		jobs[i] = &job{b: b, op: op, done: j.done, pieces: ps}
		if err := b.download(jobs[i]); err != nil {
			for _, pj := range jobs[:i+1] {
				b.release(pj)
			}
			return err
		}
	}
	j.mu.Lock()
	j.cancel = func(err error) {
		for _, pj := range jobs {
			pj.cancelWith(err)
		}
	}
	j.mu.Unlock()
	for i, pj := range jobs {
		if err := b.hand(pj); err != nil {
			for _, rest := range jobs[i:] {
				rest.err = err
				b.ending.push(rest)
			}
			return nil
		}
	}
	return nil
}
