//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// lineWriter hands each write to a channel, for a test to wait on.
type lineWriter chan []byte

func (l lineWriter) Write(p []byte) (int, error) {
	l <- slices.Clone(p)
	return len(p), nil
}

// TestSIGUSR1DumpsFlightRecords signals this process while a job's ranks
// are live and finds their operations in the dump the handler writes, on
// the stream and in each rank's file.
func TestSIGUSR1DumpsFlightRecords(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "rank_")
	t.Setenv("TORCHCOMM_FR_DUMP_TEMP_FILE", prefix)
	out := make(lineWriter, 1)
	stop := dumpFlightRecordsOnSignal(out)
	defer stop()
	ids := make([]uint64, 2)
	var dumps []gocomms.FlightDump
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		w := c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum)
		ids[c.Rank()] = w.Op().ID
		if err := w.Wait(ctx); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil { // both ids are set
			return err
		}
		if c.Rank() != 0 {
			return nil
		}
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
			return err
		}
		select {
		case line := <-out:
			return json.Unmarshal(line, &dumps)
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no flight record dumped after SIGUSR1")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, id := range ids {
		listed := func(dumps []gocomms.FlightDump) bool {
			return slices.ContainsFunc(dumps, func(d gocomms.FlightDump) bool {
				return d.Rank == r && len(d.Entries) > 0 && d.Entries[0].ID == id && d.Entries[0].State == gocomms.FlightCompleted
			})
		}
		if !listed(dumps) {
			t.Errorf("rank %d's all_reduce (op id %d) not in the dump %+v", r, id, dumps)
		}
		// The file comes after the line: wait for it.
		var file []gocomms.FlightDump
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !listed(file); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(prefix + strconv.Itoa(r)); err == nil {
				file = nil
				json.Unmarshal(b, &file)
			}
		}
		if !listed(file) {
			t.Errorf("rank %d's all_reduce (op id %d) not in its file: %+v", r, id, file)
		}
	}
}
