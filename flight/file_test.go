package flight

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestFilesWriteOncePerEvent writes a file on the first timeout and the
// first abort only, and Await waits for them; no temporary file is left.
func TestFilesWriteOncePerEvent(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "sub", "rank_0")
	var f Files
	var collected atomic.Int32
	collect := func() []Dump {
		collected.Add(1)
		return []Dump{{Comm: "c", Rank: 0, Size: 1, Entries: []Entry{{ID: 7, State: Completed}}}}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, ev := range []Event{OnTimeout, OnTimeout, OnAbort, OnTimeout} {
		f.Write(ev, name, collect, log)
	}
	f.Await()
	if n := collected.Load(); n != 2 {
		t.Errorf("%d writes, want one per kind of event: 2", n)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var dumps []Dump
	if err := json.Unmarshal(b, &dumps); err != nil || len(dumps) != 1 || dumps[0].Entries[0].ID != 7 {
		t.Fatalf("the file holds %s (%v)", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "sub", ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
