package osyield

import "golang.org/x/sys/unix"

// Yield gives the calling thread's core to another runnable thread, of
// this process or another, if one waits (sched_yield).
func Yield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
