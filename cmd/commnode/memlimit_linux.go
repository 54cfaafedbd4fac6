package main

import (
	"os"
	"syscall"
)

// physicalMemory returns the machine's memory in bytes, 0 if unknown.
func physicalMemory() uint64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	return uint64(info.Totalram) * uint64(info.Unit)
}

// hugePages returns the kernel's transparent huge pages mode, "" if
// unknown.
func hugePages() string {
	b, err := os.ReadFile(thpSetting)
	if err != nil {
		return ""
	}
	return thpMode(string(b))
}
