//go:build !linux

package main

// physicalMemory returns 0: the machine's memory is read on Linux only.
func physicalMemory() uint64 { return 0 }

// hugePages returns "": the huge pages mode is read on Linux only.
func hugePages() string { return "" }
