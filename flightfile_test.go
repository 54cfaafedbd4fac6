package gocomms_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// TestFlightRecordFilesOnTimeout has rank 1 of two never issue the
// all-reduce rank 0 waits in: rank 0 times out and writes its file, rank 1
// is aborted and writes its own, both where TORCHCOMM_FR_DUMP_TEMP_FILE
// says, before RunLocal returns.
func TestFlightRecordFilesOnTimeout(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "dumps", "rank_")
	t.Setenv("TORCHCOMM_FR_DUMP_TEMP_FILE", prefix)
	t.Setenv("TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME", "")
	barriers := make([]uint64, 2) // op ids, which tell these communicators from others of the process
	var stuck uint64
	timedOut := make(chan struct{})
	err := gocomms.RunLocal(context.Background(), 2, func(ctx context.Context, c *gocomms.Comm) error {
		w := c.BarrierAsync()
		barriers[c.Rank()] = w.Op().ID
		if err := w.Wait(ctx); err != nil {
			return err
		}
		if c.Rank() == 1 {
			<-timedOut // never issues the all-reduce
			return nil
		}
		defer close(timedOut)
		w = c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(200*time.Millisecond))
		stuck = w.Op().ID
		return w.Wait(ctx)
	})
	if !errors.Is(err, gocomms.ErrTimeout) {
		t.Fatalf("RunLocal: %v, want a timeout", err)
	}
	for r := range 2 {
		b, err := os.ReadFile(prefix + strconv.Itoa(r))
		if err != nil {
			t.Fatal(err)
		}
		var dumps []gocomms.FlightDump
		if err := json.Unmarshal(b, &dumps); err != nil {
			t.Fatalf("rank %d's file is no JSON array of dumps: %v\n%s", r, err, b)
		}
		i := slices.IndexFunc(dumps, func(d gocomms.FlightDump) bool {
			return d.Rank == r && d.Size == 2 && len(d.Entries) > 0 && d.Entries[0].ID == barriers[r]
		})
		if i < 0 {
			t.Fatalf("rank %d's file has no dump of its communicator: %s", r, b)
		}
		d := dumps[i]
		if d.Comm != "local" || !slices.Equal(d.Ranks, []int{0, 1}) || d.Entries[0].State != gocomms.FlightCompleted {
			t.Errorf("rank %d's dump: %+v", r, d)
		}
		switch {
		case r == 0 && (len(d.Entries) != 2 || d.Entries[1].ID != stuck || d.Entries[1].State != gocomms.FlightTimedOut ||
			d.Entries[1].Seq != 1 || d.Entries[1].Op != gocomms.OpAllReduce || d.Entries[1].Started.IsZero()):
			t.Errorf("rank 0's dump does not end in its timed-out all_reduce: %+v", d.Entries)
		case r == 1 && len(d.Entries) != 1:
			t.Errorf("rank 1's dump lists more than its barrier: %+v", d.Entries)
		}
	}
}

// TestFlightRecordFileNames names files as torchcomms does.
func TestFlightRecordFileNames(t *testing.T) {
	for _, c := range []struct {
		prefix, dynamic string
		want            string
		ok              bool
	}{
		{"", "", "", false},
		{"/tmp/fr_", "", "/tmp/fr_3", true},
		{"/tmp/fr_", "0", "/tmp/fr_3", true},
		{"/tmp/fr_", "1", "/tmp/fr_", true},
		{"/tmp/trace.json", "true", "/tmp/trace.json", true},
	} {
		t.Setenv("TORCHCOMM_FR_DUMP_TEMP_FILE", c.prefix)
		t.Setenv("TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME", c.dynamic)
		if got, ok := gocomms.FlightRecordFile(3); got != c.want || ok != c.ok {
			t.Errorf("prefix %q, dynamic %q: %q %v, want %q %v", c.prefix, c.dynamic, got, ok, c.want, c.ok)
		}
	}
}
