package main

import (
	"math"
	"os"
	"runtime/debug"
)

// simHeapGrowth is the collector's GOGC in a simulation: 200 to 800
// measured alike at 100,000 ranks, each some 3 s (12%) faster than 100.
const simHeapGrowth = 400

// limitSimMemory gives the collector a soft limit of five eighths of the
// machine's memory, unless GOMEMLIMIT sets one, and lets the heap grow to
// five times what survived the last collection, unless GOGC sets how far.
// A simulation's heap is nearly all live (every rank's actors, links and
// schedule), and it grows from nothing while the ranks are built and
// linked: the default pacing collects each time the heap doubles, marking
// all of it again for little garbage, which took a sixth of the wall
// time of 100,000 ranks. The limit bounds the growth instead: near it
// the collector runs more often, so a million ranks, 13.5 GB live, take
// about a fifth longer under 15 GiB than under 18, and fit in two thirds
// of a 24 GiB machine. The rest of the machine is left to the system and
// to whatever runs beside the simulation.
// It returns the limit in force, math.MaxInt64 where there is none.
func limitSimMemory() int64 {
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := physicalMemory(); total > 0 && total/8*5 < math.MaxInt64 {
			debug.SetMemoryLimit(int64(total / 8 * 5))
		}
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(simHeapGrowth)
	}
	return debug.SetMemoryLimit(-1)
}
