package fifo

// Queue is a first-in, first-out queue on a ring that doubles when full
// (its size a power of two, so that a position is a mask, not a division):
// pushing and popping take constant time and, once it has grown, allocate
// nothing, however long it stays non-empty. It holds fewer than 1<<32
// items, which keeps it four words: a simulation has millions of
// mailboxes. The zero value is empty. It is not safe for concurrent use:
// its owner (an actor, a mailbox under its lock) serializes access.
type Queue[T any] struct {
	buf  []T
	head uint32 // index of the oldest item
	n    uint32
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return int(q.n) }

// Push appends v.
func (q *Queue[T]) Push(v T) {
	if int(q.n) == len(q.buf) {
		if q.n == 1<<31 {
			panic("fifo: queue full") // 1<<32 items: no mailbox gets there
		}
		grown := make([]T, max(2, 2*len(q.buf)))
		for i := range q.Len() {
			grown[i] = q.At(i)
		}
		q.buf, q.head = grown, 0
	}
	q.buf[q.at(int(q.n))] = v
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
	q.head = uint32(q.at(1))
	q.n--
	return v, true
}

// At returns the i-th oldest item, 0 <= i < Len.
func (q *Queue[T]) At(i int) T { return q.buf[q.at(i)] }

// at is the index in buf of the i-th oldest item.
func (q *Queue[T]) at(i int) int { return (int(q.head) + i) & (len(q.buf) - 1) }

// Remove removes the i-th oldest item, keeping the others' order.
func (q *Queue[T]) Remove(i int) {
	for ; i+1 < q.Len(); i++ {
		q.buf[q.at(i)] = q.At(i + 1)
	}
	var zero T
	q.buf[q.at(q.Len()-1)] = zero
	q.n--
}
