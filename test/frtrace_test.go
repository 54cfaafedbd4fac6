//go:build unix

package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// TestTimeoutLeavesFlightRecordsForFRTrace runs two commnode bench ranks
// of a three-rank job whose third rank, this process, joins and never
// issues anything: the two time out, each writing its flight records where
// TORCHCOMM_FR_DUMP_TEMP_FILE says, this rank aborts and writes its own,
// and commnode fr-trace names the operation the two wait in and rank 2 as
// the one that never issued it.
func TestTimeoutLeavesFlightRecordsForFRTrace(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	env := map[string]string{"TORCHCOMM_FR_DUMP_TEMP_FILE": filepath.Join(dir, "rank_"),
		"RANK": "2", "WORLD_SIZE": "3", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "3",
		"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": strconv.Itoa(port)}
	for k, v := range env {
		t.Setenv(k, v)
	}
	procs := startRanksOn(t, port, 3, []int{0, 1}, "bench", "-timeout", "2s", "-b", "8", "-e", "8", "-n", "1", "-w", "1", "-c", "0")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := gocomms.NewComm(ctx, gocomms.NativeBackend, gocomms.CPU, "commnode")
	if err != nil {
		t.Fatal(err)
	}
	wait(t, procs, 20*time.Second)
	// The first to time out aborts, which may fail the other before its
	// own timeout.
	timedOut := false
	for _, p := range procs {
		if exitCode(p.err) <= 0 {
			t.Errorf("rank %d exited with %v, want a failure:\n%s", p.rank, p.err, p.stderr.String())
		}
		timedOut = timedOut || strings.Contains(p.stderr.String(), "timed out")
	}
	if !timedOut {
		t.Errorf("neither rank timed out:\n%s\n%s", procs[0].stderr.String(), procs[1].stderr.String())
	}
	c.Abort(errors.New("the others timed out"))
	c.Finalize(ctx) // waits for the file; its error is the abort's

	out, err := exec.Command(commnode, "fr-trace", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("fr-trace: %v\n%s", err, out)
	}
	t.Logf("commnode fr-trace:\n%s", out)
	for _, want := range []string{"dumps from ranks 0 1 2", "stuck: ", "not_issued:  rank 2"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in the report", want)
		}
	}

	out, err = exec.Command(commnode, "fr-trace", "--json", dir).Output()
	if err != nil {
		t.Fatalf("fr-trace --json: %v", err)
	}
	var rep struct {
		Comms []struct {
			Comm  string `json:"comm"`
			Stuck *struct {
				Op string `json:"op"`
				By []struct {
					State string `json:"state"`
					Ranks []int  `json:"ranks"`
				} `json:"by"`
			} `json:"stuck"`
		} `json:"comms"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("fr-trace --json: %v\n%s", err, out)
	}
	if len(rep.Comms) != 1 || rep.Comms[0].Stuck == nil {
		t.Fatalf("fr-trace --json: no stuck operation in %s", out)
	}
	stuck := rep.Comms[0].Stuck
	var waiting []int
	timedOut = false
	for _, b := range stuck.By {
		switch b.State {
		case "not_issued":
			if !reflect.DeepEqual(b.Ranks, []int{2}) {
				t.Errorf("ranks %v never issued %s, want rank 2", b.Ranks, stuck.Op)
			}
		case "timed_out", "failed", "aborted", "started":
			waiting = append(waiting, b.Ranks...)
			timedOut = timedOut || b.State == "timed_out"
		}
	}
	if slices.Sort(waiting); !reflect.DeepEqual(waiting, []int{0, 1}) || !timedOut {
		t.Errorf("%s: want ranks 0 and 1 in it, one at least timed out: %s", stuck.Op, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "rank_2")); err != nil {
		t.Error(err)
	}
}
