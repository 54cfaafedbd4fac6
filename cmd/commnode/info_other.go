//go:build !linux && !darwin

package main

// sharedMemory says the size of dir is not known here.
func sharedMemory(dir string) string { return dir + ": size unknown on this system" }
