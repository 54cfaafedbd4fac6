package main

import (
	"math"
	"os"
	"runtime/debug"
)

// limitSimMemory gives the collector a soft limit of three quarters of
// the machine's memory, unless GOMEMLIMIT sets one. A simulation's heap
// is nearly all live (every rank's actors, links and schedule), so the
// default pacing, which lets the heap grow to twice what survived the
// last collection, would run a machine out of memory at a scale whose
// live heap fits in it; near the limit the collector runs more often
// instead.
func limitSimMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total := physicalMemory(); total > 0 && total/4*3 < math.MaxInt64 {
		debug.SetMemoryLimit(int64(total / 4 * 3))
	}
}
