//go:build linux || darwin

package main

import (
	"fmt"
	"syscall"
)

// sharedMemory describes the file system at dir: its size and free space.
func sharedMemory(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unavailable: " + err.Error()
	}
	gib := func(blocks uint64) float64 { return float64(blocks) * float64(st.Bsize) / (1 << 30) }
	return fmt.Sprintf("%s: %.1f GiB, %.1f GiB free", dir, gib(st.Blocks), gib(st.Bavail))
}
