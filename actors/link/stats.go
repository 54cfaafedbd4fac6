package link

import "sync/atomic"

// stats are the process's totals over every link, for operators: they
// decide nothing, so they need not come from the runtime.
var stats struct {
	reconnects    atomic.Uint64
	retransmitted atomic.Uint64
}

// Stats returns how many times this process's links made a new connection
// after one broke, and how many frames they sent again on the new one
// (sent on the broken one, and not acknowledged).
func Stats() (reconnects, retransmitted uint64) {
	return stats.reconnects.Load(), stats.retransmitted.Load()
}
