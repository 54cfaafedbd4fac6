package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// startCPUProfile profiles this process's CPU into path until the
// returned function is called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// openHeapProfile creates path and returns the function that writes a
// heap profile there, after a collection (the profile's in-use figures
// are the last collection's), and the one that closes it; an empty path
// profiles nothing, and write is nil.
func openHeapProfile(path string) (write func() error, closeFile func(), err error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	write = func() error {
		runtime.GC()
		return pprof.WriteHeapProfile(f)
	}
	return write, func() { f.Close() }, nil
}
