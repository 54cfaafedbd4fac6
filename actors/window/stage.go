package window

import (
	"sync/atomic"

	"github.com/gocomms/gocomms/transport"
)

// ChunkBytes bounds the data of one frame: a larger operation travels as
// several, each applied on its own, so that the origin's copy, the wire
// and the target's copy of one chunk overlap with the next, and no frame
// outgrows what a link keeps unacknowledged.
const ChunkBytes = 4 << 20

// chunks returns how many frames carry n bytes of data.
func chunks(n int) int { return max(1, (n+ChunkBytes-1)/ChunkBytes) }

// Stage copies src into a buffer laid out as the frames that will carry
// it: each chunk of data behind room for its request header, so that the
// actor sends every chunk where it lies, copying nothing more. The buffer
// becomes the Op's Data.
func Stage(src []byte) []byte {
	n := chunks(len(src))
	buf := transport.GetBuffer(n*requestSize + len(src))
	for i := range n {
		lo, hi := chunkBounds(i, len(src))
		copy(buf[(i+1)*requestSize+lo:], src[lo:hi])
	}
	return buf
}

// chunkBounds returns the data bytes [lo, hi) of chunk i of n bytes.
func chunkBounds(i, n int) (lo, hi int) {
	return i * ChunkBytes, min(n, (i+1)*ChunkBytes)
}

// stagedFrame returns chunk i of staged data of n bytes: its header's room
// and its data, together the frame's payload.
func stagedFrame(staged []byte, i, n int) []byte {
	lo, hi := chunkBounds(i, n)
	return staged[i*requestSize+lo : (i+1)*requestSize+hi]
}

// stagedData returns the data of chunk i of staged data of n bytes.
func stagedData(staged []byte, i, n int) []byte { return stagedFrame(staged, i, n)[requestSize:] }

// lendMin is the smallest data that travels lent rather than handed
// over: the operation completes locally once the transports let go of
// it, after the peer's link acknowledged it, which holds a loop of large
// puts to the pace of the wire instead of staging without bound.
const lendMin = 64 << 10

// lender gives a staged buffer back to the pool, and calls done if set,
// once the transports have let go of every chunk lent from it.
type lender struct {
	left   atomic.Int32
	staged []byte
	done   func(error)
}

func (l *lender) sent() {
	if l.left.Add(-1) != 0 {
		return
	}
	transport.PutBuffer(l.staged)
	if l.done != nil {
		l.done(nil)
	}
}
