//go:build unix

package test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFlightRecordOnSIGUSR1 sends SIGUSR1 to one rank of a running
// two-rank bench: it writes its communicator's flight record to stderr as
// one line of JSON, listing the all-reduces it ran, and keeps running.
func TestFlightRecordOnSIGUSR1(t *testing.T) {
	port := strconv.Itoa(freePort(t))
	cmds := make([]*exec.Cmd, 2)
	var lines *bufio.Scanner
	var stderrLines *bufio.Scanner
	for r := range cmds {
		cmd := exec.Command(commnode, "bench", "-b", "8", "-e", "64M", "-n", "20")
		cmd.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "WORLD_SIZE=2", "LOCAL_RANK="+strconv.Itoa(r),
			"LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port)
		if r == 0 {
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			errs, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			lines, stderrLines = bufio.NewScanner(out), bufio.NewScanner(errs)
			stderrLines.Buffer(nil, 16<<20)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})

	// A row of results means the job runs, and the handler is in place.
	running := make(chan bool, 1)
	go func() {
		for lines.Scan() {
			if f := strings.Fields(lines.Text()); len(f) > 0 && f[0] == "8" {
				running <- true
				break
			}
		}
		for lines.Scan() { // drain, so that the rank never blocks on stdout
		}
	}()
	select {
	case <-running:
	case <-time.After(time.Minute):
		t.Fatal("the bench printed no row within a minute")
	}
	if err := cmds[0].Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	dump := make(chan string, 1)
	go func() {
		for stderrLines.Scan() {
			if strings.HasPrefix(stderrLines.Text(), "[") {
				dump <- stderrLines.Text()
				return
			}
		}
	}()
	var line string
	select {
	case line = <-dump:
	case <-time.After(time.Minute):
		t.Fatal("no flight record on stderr within a minute of SIGUSR1")
	}
	var records []struct {
		Comm    string `json:"comm"`
		Rank    int    `json:"rank"`
		Size    int    `json:"size"`
		Entries []struct {
			Op    string `json:"op"`
			State string `json:"state"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(line), &records); err != nil {
		t.Fatalf("the dump is no JSON array of records: %v\n%.500s", err, line)
	}
	if len(records) != 1 || records[0].Rank != 0 || records[0].Size != 2 {
		t.Fatalf("dumped %d records, want rank 0's of 2 ranks: %.500s", len(records), line)
	}
	done := 0
	for _, e := range records[0].Entries {
		if e.Op == "all_reduce" && e.State == "completed" {
			done++
		}
	}
	if done == 0 {
		t.Errorf("the record lists no completed all_reduce: %.500s", line)
	}
	if err := cmds[0].Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("rank 0 is gone after SIGUSR1: %v", err)
	}
}
