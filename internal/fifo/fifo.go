package fifo

// Queue is a first-in, first-out queue on a ring that doubles when full
// (its size a power of two, so that a position is a mask, not a division):
// pushing and popping take constant time and, once it has grown, allocate
// nothing, however long it stays non-empty. The zero value is empty. It
// is not safe for concurrent use: its owner (an actor, a mailbox under
// its lock) serializes access.
type Queue[T any] struct {
	buf  []T
	head int // index of the oldest item
	n    int
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return q.n }

// Push appends v.
func (q *Queue[T]) Push(v T) {
	if q.n == len(q.buf) {
		grown := make([]T, max(2, 2*len(q.buf)))
		for i := range q.n {
			grown[i] = q.At(i)
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// Pop removes and returns the oldest item; false if there is none.
func (q *Queue[T]) Pop() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero // keep nothing alive
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v, true
}

// At returns the i-th oldest item, 0 <= i < Len.
func (q *Queue[T]) At(i int) T { return q.buf[(q.head+i)&(len(q.buf)-1)] }

// Remove removes the i-th oldest item, keeping the others' order.
func (q *Queue[T]) Remove(i int) {
	for ; i+1 < q.n; i++ {
		q.buf[(q.head+i)&(len(q.buf)-1)] = q.At(i + 1)
	}
	var zero T
	q.buf[(q.head+q.n-1)&(len(q.buf)-1)] = zero
	q.n--
}
