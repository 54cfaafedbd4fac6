package reduce

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/gocomms/gocomms/tensor"
)

// FetchAndOpWord combines operand into the 8-byte word at the start of
// mem (a window, here or mapped from a peer), 8-byte aligned, with op on dtype dt, and returns the word's bits
// before. It is a hardware atomic, so that a rank that maps the window
// and a target's actor are atomic with respect to one another on a word.
func FetchAndOpWord(mem []byte, op Kind, dt tensor.DType, operand []byte) uint64 {
	word := (*uint64)(unsafe.Pointer(unsafe.SliceData(mem)))
	for {
		old := atomic.LoadUint64(word)
		var cur, next [8]byte
		binary.NativeEndian.PutUint64(cur[:], old)
		Combine(New(op), dt, next[:], cur[:], operand)
		if atomic.CompareAndSwapUint64(word, old, binary.NativeEndian.Uint64(next[:])) {
			return old
		}
	}
}

// CompareAndSwapWord replaces the 8-byte word at the start of mem, 8-byte
// aligned, with value if its bits equal compare's, and returns its bits
// before, atomically as FetchAndOpWord.
func CompareAndSwapWord(mem, value, compare []byte) uint64 {
	word := (*uint64)(unsafe.Pointer(unsafe.SliceData(mem)))
	want, v := binary.NativeEndian.Uint64(compare), binary.NativeEndian.Uint64(value)
	for {
		old := atomic.LoadUint64(word)
		if old != want || atomic.CompareAndSwapUint64(word, old, v) {
			return old
		}
	}
}
