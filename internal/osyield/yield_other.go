//go:build !linux

package osyield

import "runtime"

// Yield lets this process's other goroutines run: other systems offer
// nothing finer to Go.
func Yield() { runtime.Gosched() }
