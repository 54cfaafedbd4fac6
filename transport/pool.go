package transport

import (
	"math/bits"
	"sync"
)

// Size classes are powers of two from 64 B to 1 GiB. Smaller requests round
// up to 64 B; larger ones are allocated directly and dropped on Put.
const (
	minClassBits = 6
	maxClassBits = 30
)

// Large buffers are also kept in a reserve that garbage collection does not
// empty, up to reserveLimit bytes in all: a sync.Pool drops its contents
// every other collection, and memory the process touches for the first
// time costs page faults that, on some virtual machines, are slower than
// the network (3 ms per MiB measured here).
const (
	reserveMinBits = 16 // 64 KiB
	reserveLimit   = 128 << 20
)

// The buffer pool is the package's only mutable global state: payload
// buffers are shared by every connection of every network in the process.
var (
	// classes[i] holds *[]byte boxes of buffers with cap >= 1<<(i+minClassBits).
	classes [maxClassBits - minClassBits + 1]sync.Pool
	// boxes recycles the empty *[]byte boxes, so that a Get/Put pair does
	// not allocate one to put a slice into a sync.Pool.
	boxes sync.Pool

	reserve struct {
		sync.Mutex
		bytes   int
		classes [maxClassBits - minClassBits + 1][][]byte
	}
)

// fromReserve takes a buffer of class k from the reserve, if one is there.
func fromReserve(k int) []byte {
	if k < reserveMinBits {
		return nil
	}
	reserve.Lock()
	defer reserve.Unlock()
	stack := reserve.classes[k-minClassBits]
	if len(stack) == 0 {
		return nil
	}
	b := stack[len(stack)-1]
	stack[len(stack)-1] = nil
	reserve.classes[k-minClassBits] = stack[:len(stack)-1]
	reserve.bytes -= cap(b)
	return b
}

// toReserve keeps b, of class k, in the reserve if it has room.
func toReserve(k int, b []byte) bool {
	if k < reserveMinBits {
		return false
	}
	reserve.Lock()
	defer reserve.Unlock()
	if reserve.bytes+cap(b) > reserveLimit {
		return false
	}
	reserve.classes[k-minClassBits] = append(reserve.classes[k-minClassBits], b)
	reserve.bytes += cap(b)
	return true
}

// GetBuffer returns a slice of length n (cap >= n) with undefined contents.
// Pass it to PutBuffer, or let a frame carry it, when done.
func GetBuffer(n int) []byte {
	if n <= 0 {
		return nil
	}
	k := max(bits.Len(uint(n-1)), minClassBits) // ceil(log2(n))
	if k > maxClassBits {
		return make([]byte, n)
	}
	if b := fromReserve(k); b != nil {
		return b[:n]
	}
	box, _ := classes[k-minClassBits].Get().(*[]byte)
	if box == nil {
		return make([]byte, n, 1<<k)
	}
	b := *box
	*box = nil
	boxes.Put(box)
	return b[:n]
}

// PutBuffer returns b to the pool; b must not be used afterwards. Any slice
// is accepted: it is filed under the largest class its capacity covers, and
// slices too small or too large for the pool are dropped.
func PutBuffer(b []byte) {
	c := cap(b)
	if c < 1<<minClassBits {
		return
	}
	k := bits.Len(uint(c)) - 1 // floor(log2(c))
	if k > maxClassBits || toReserve(k, b[:0]) {
		return
	}
	box, _ := boxes.Get().(*[]byte)
	if box == nil {
		box = new([]byte)
	}
	*box = b[:0]
	classes[k-minClassBits].Put(box)
}
