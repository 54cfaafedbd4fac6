//go:build unix

package transport

import "syscall"

// mapPhantom maps the phantom region read-only, outside the Go heap: the
// collector does not count it, untouched pages cost nothing, and a write
// into a phantom payload faults at once instead of corrupting a result.
func mapPhantom() []byte {
	b, err := syscall.Mmap(-1, 0, phantomBytes, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, phantomBytes)
	}
	return b
}
