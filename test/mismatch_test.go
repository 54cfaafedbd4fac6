package test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMismatchAcrossProcesses: commnode processes that disagree on one
// argument of their collective (bench with different flags) all end,
// none hangs and none blames a failure: under GOCOMMS_CHECK_COLLECTIVES
// every rank exits with the same message listing every rank's call.
// Without it the deviant exits naming the difference, and so do the
// ranks that meet it (which those are depends on the algorithm); a rank
// that completed the collective fails its next one naming the mismatch
// a peer reports, or a peer that finalized with a part in fewer collectives. The
// timeout is far above the time allowed, so an ending by timeout would
// show.
func TestMismatchAcrossProcesses(t *testing.T) {
	bench := []string{"bench", "-b", "16", "-e", "16", "-n", "1", "-w", "0", "-timeout", "20s", "-heartbeat", "100ms", "-silence", "2s"}
	cases := []struct {
		name            string
		ours, deviant   []string
		says, checkSays string
	}{
		{"op", []string{"--op", "all_reduce"}, []string{"--op", "broadcast"}, "called broadcast(root 0, 4 float32)", "called broadcast(root 0, 4 float32)"},
		{"count", []string{"--op", "all_reduce"}, []string{"--op", "all_reduce", "-b", "32", "-e", "32"}, "all_reduce(sum, 8 float32)", "called all_reduce(sum, 8 float32)"},
		{"dtype", []string{"--op", "all_reduce"}, []string{"--op", "all_reduce", "--dtype", "float64", "-b", "32", "-e", "32"}, "all_reduce(sum, 4 float64)", "called all_reduce(sum, 4 float64)"},
		{"redop", []string{"--op", "all_reduce"}, []string{"--op", "all_reduce", "--redop", "max"}, "all_reduce(max, 4 float32)", "called all_reduce(max, 4 float32)"},
		{"root", []string{"--op", "broadcast"}, []string{"--op", "broadcast", "--root", "1"}, "root 1", "called broadcast(root 1, 4 float32)"},
	}
	for _, tc := range cases {
		for _, checked := range []bool{false, true} {
			for _, n := range []int{2, 5} {
				t.Run(fmt.Sprintf("%s/checked=%v/%d_ranks", tc.name, checked, n), func(t *testing.T) {
					t.Setenv("GOCOMMS_CHECK_COLLECTIVES", fmt.Sprint(checked))
					port := freePort(t)
					procs := startRanksOn(t, port, n, seq(0, n-1), append(bench, tc.ours...)...)
					procs = append(procs, startRanksOn(t, port, n, []int{n - 1}, append(bench, tc.deviant...)...)...)
					wait(t, procs, 15*time.Second)
					says := tc.says
					if checked {
						says = tc.checkSays
					}
					for _, p := range procs {
						if !checked && p.rank != n-1 {
							if p.err != nil && !strings.Contains(p.stderr.String(), "invalid argument") {
								t.Errorf("rank %d: exit %v after %v, want success or a mismatch\nstderr:\n%s", p.rank, p.err, p.elapsed, p.stderr.String())
							}
							continue
						}
						if p.err == nil || !strings.Contains(p.stderr.String(), "invalid argument") || !strings.Contains(p.stderr.String(), says) {
							t.Errorf("rank %d: exit %v after %v, want a failure saying %q\nstderr:\n%s", p.rank, p.err, p.elapsed, says, p.stderr.String())
						}
					}
				})
			}
		}
	}
}

// seq returns lo, lo+1, ..., hi-1.
func seq(lo, hi int) []int {
	var s []int
	for r := lo; r < hi; r++ {
		s = append(s, r)
	}
	return s
}
