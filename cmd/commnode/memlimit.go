package main

import (
	"math"
	"os"
	"runtime/debug"
)

// limitSimMemory gives the collector a soft limit of five eighths of the
// machine's memory, unless GOMEMLIMIT sets one. A simulation's heap is
// nearly all live (every rank's actors, links and schedule), so the
// default pacing, which lets the heap grow to twice what survived the
// last collection, would take twice the memory the simulation needs, and
// run a machine out of it at a scale whose live heap fits. Near the limit
// the collector runs more often instead: a million ranks, 13.5 GB live,
// take about a fifth longer under 15 GiB than under 18, and fit in two
// thirds of a 24 GiB machine. The rest of the machine is left to the
// system and to whatever runs beside the simulation.
// It returns the limit in force, math.MaxInt64 where there is none.
func limitSimMemory() int64 {
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := physicalMemory(); total > 0 && total/8*5 < math.MaxInt64 {
			debug.SetMemoryLimit(int64(total / 8 * 5))
		}
	}
	return debug.SetMemoryLimit(-1)
}
