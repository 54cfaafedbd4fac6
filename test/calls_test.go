package test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/gpu/cuda/fakecuda"
)

// callsPerGroupAllReduce bounds TestCUDADriverCallsAcrossProcesses: one
// all-reduce of 256 MiB in the default device buffer queues 8 calls a
// rank today (the caller's event recorded and waited for, then 6).
const callsPerGroupAllReduce = 12

// TestCUDADriverCallsAcrossProcesses counts, on the fake driver, the
// driver calls that one all-reduce on the device group queues on each
// rank: the host work of an operation, which stands in for its host time
// until a GPU measures that. Ranks are commnode processes, and the count
// is the difference between benches of 3 iterations and of 1, halved:
// what the bench does once, and the setup, cancel out. Context sets
// (thread-local stores) and the queries of the thread that waits for the
// device are counted apart. 2 ranks run 256 MiB with the default buffer;
// 8 run 8 MiB in a buffer of 8 MiB, the same one window, and 16 MiB in
// it, two.
func TestCUDADriverCallsAcrossProcesses(t *testing.T) {
	useFakeCUDA(t)
	for _, tc := range []struct {
		ranks         int
		size, buffer  string
		windows, most int
	}{
		{2, "256M", "", 1, callsPerGroupAllReduce},
		{8, "8M", strconv.Itoa(8 << 20), 1, callsPerGroupAllReduce},
		{8, "16M", strconv.Itoa(8 << 20), 2, callsPerGroupAllReduce + 5},
	} {
		t.Run(fmt.Sprintf("%d_ranks_%s", tc.ranks, tc.size), func(t *testing.T) {
			if tc.buffer != "" {
				t.Setenv("GOCOMMS_NVL_DEVICE_BUFFER", tc.buffer)
			}
			count := func(iters int) fakecuda.Count {
				path := filepath.Join(t.TempDir(), "calls")
				t.Setenv(fakecuda.CallsVar, path)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := runLaunch(t, ctx, tc.ranks, "bench", "-device", "cuda", "--op", "all_reduce",
					"-b", tc.size, "-e", tc.size, "-w", "0", "-n", strconv.Itoa(iters), "-c", "1", "-timeout", "1m")
				if err != nil || !strings.Contains(string(out), "Out of bounds values : 0 OK") {
					t.Fatalf("bench of %d iterations: %v\n%s", iters, err, out)
				}
				if !strings.Contains(string(out), "from device memory") {
					t.Fatalf("the bench did not run on the device group:\n%s", out)
				}
				c, err := fakecuda.Calls(path)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			one, three := count(1), count(3)
			d := three.Sub(one)
			per := d.Calls / uint64(2*tc.ranks)
			t.Logf("an all-reduce of %s in %d windows, per rank of %d: %d driver calls, %d context sets, %d queries while waiting",
				tc.size, tc.windows, tc.ranks, per, d.ContextSets/uint64(2*tc.ranks), d.Queries/uint64(2*tc.ranks))
			if per == 0 || per > uint64(tc.most) {
				t.Errorf("%d driver calls per all-reduce a rank; want 1 to %d", per, tc.most)
			}
		})
	}
}
