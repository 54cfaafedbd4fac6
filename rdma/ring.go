package rdma

// opRing is the FIFO of requests awaiting their replies, which come back in
// the order the requests went out. It is a ring that doubles when full, so
// that a queue that never empties, under a steady stream of requests, does
// not grow without end.
type opRing struct {
	buf        []*op // len is a power of two, or 0
	head, size int
}

func (r *opRing) push(o *op) {
	if r.size == len(r.buf) {
		grown := make([]*op, max(16, 2*len(r.buf)))
		for i := range r.size {
			grown[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = grown, 0
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = o
	r.size++
}

// peek returns the oldest op, or nil.
func (r *opRing) peek() *op {
	if r.size == 0 {
		return nil
	}
	return r.buf[r.head]
}

// pop removes the oldest op, which must be there.
func (r *opRing) pop() *op {
	o := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return o
}
