package main

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
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

// hugePagesHint is what sim says of a large run where the kernel backs
// the heap with small pages: transparent huge pages left to madvise (as
// on many distributions) give the Go heap none, since the runtime asks
// for none, and a heap of gigabytes then faults in 4 KiB at a time and
// misses the TLB. On a 2-core virtual machine, 100,000 ranks took 40.2
// and 41.8 s with madvise and 32.8 and 33.1 s with always (0.92 M page
// faults against 26 K). Asking for huge pages from inside the process
// comes too late: the runtime touches what it maps at once.
func hugePagesHint(mode string) string {
	if mode == "" || mode == "always" {
		return ""
	}
	return fmt.Sprintf("pages     transparent huge pages are %q, so the heap faults in 4 KiB pages: "+
		"`always` in %s ran 100,000 ranks a fifth faster on a 2-core machine\n", mode, thpSetting)
}

// thpSetting is where Linux keeps its transparent huge pages mode.
const thpSetting = "/sys/kernel/mm/transparent_hugepage/enabled"

// thpMode returns the mode a read of thpSetting selects, in brackets
// ("always [madvise] never"), or "".
func thpMode(setting string) string {
	_, after, ok := strings.Cut(setting, "[")
	mode, _, closed := strings.Cut(after, "]")
	if !ok || !closed {
		return ""
	}
	return mode
}
