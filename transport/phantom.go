package transport

import (
	"sync"
	"unsafe"
)

// phantomBytes bounds a phantom payload. It lies above the pool's largest
// class, so that PutBuffer drops a phantom view instead of filing it.
const phantomBytes = 1 << (maxClassBits + 1)

var phantom = sync.OnceValue(mapPhantom)

// Phantom returns n bytes that stand for a payload in a run that moves no
// data (the simulator's phantom mode, which times operations too large to
// hold): a view of one region every caller shares, never written, which
// costs no memory until read and which PutBuffer drops. It returns nil for
// n <= 0 or n > 2 GiB.
func Phantom(n int) []byte {
	if n <= 0 || n > phantomBytes {
		return nil
	}
	return phantom()[:n]
}

// IsPhantom reports whether p is a view of the phantom region: a
// transport that must copy a lent payload need not copy one that carries
// nothing.
func IsPhantom(p []byte) bool {
	return len(p) > 0 && unsafe.SliceData(p) == unsafe.SliceData(phantom())
}
