package flight

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flight-record files are where operators look after a hang: with
// TORCHCOMM_FR_DUMP_TEMP_FILE set, a communicator whose operation times
// out, or that aborts, writes the flight records of its rank to a file,
// as torchcomms' FlightRecorderHook does from its abort hook.

// Event is what made a communicator write its flight records.
type Event uint8

const (
	OnTimeout Event = iota
	OnAbort
	events
)

// fileWait bounds how long Files.Await waits for the files being
// written: long enough for a local disk, short enough that a stuck file
// system does not hold up a caller that got a timeout or an abort.
const fileWait = 2 * time.Second

// FileName returns the file the flight records of global rank go to, as
// torchcomms names it: TORCHCOMM_FR_DUMP_TEMP_FILE followed by the rank,
// or, with TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME true, the variable's value
// as it is. Both are read at each call. ok is false when
// TORCHCOMM_FR_DUMP_TEMP_FILE is unset or empty: then no file is written
// (torchcomms would fall back to ~/.cache/torch).
func FileName(rank int) (name string, ok bool) {
	prefix := os.Getenv("TORCHCOMM_FR_DUMP_TEMP_FILE")
	if prefix == "" {
		return "", false
	}
	if dynamic, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME"))); err == nil && dynamic {
		return prefix, true
	}
	return prefix + strconv.Itoa(rank), true
}

// WriteFile writes dumps to name, as WriteDumps, through a temporary file
// beside it, so that a reader never sees half a dump.
func WriteFile(name string, dumps []Dump) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gocomms: flight record: %w", err)
	}
	// Hidden, so that a reader of the directory (commnode fr-trace) skips it.
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*")
	if err != nil {
		return fmt.Errorf("gocomms: flight record: %w", err)
	}
	err = f.Chmod(0o644) // as a file created plainly, for whoever analyses it
	if err == nil {
		err = WriteDumps(f, dumps)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gocomms: flight record: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(f.Name(), name); err != nil {
			err = fmt.Errorf("gocomms: flight record: %w", err)
		}
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Files is a communicator's part in writing flight-record files. The
// zero value is ready.
type Files struct {
	written [events]atomic.Bool // once per kind of event
	mu      sync.Mutex
	pending []chan struct{} // closed as each write ends
}

// Write writes, once per kind of event and without blocking, the dumps
// that collect returns, called then, to name (WriteFile). The outcome is
// logged: the operation's own error is what its caller needs.
func (f *Files) Write(ev Event, name string, collect func() []Dump, log *slog.Logger) {
	if !f.written[ev].CompareAndSwap(false, true) {
		return
	}
	done := make(chan struct{})
	f.mu.Lock()
	f.pending = append(f.pending, done)
	f.mu.Unlock()
	go func() {
		defer close(done)
		if err := WriteFile(name, collect()); err != nil {
			log.Warn("flight recorder: dump not written", "err", err)
			return
		}
		log.Info("flight recorder: dumped", "file", name)
	}()
}

// Await waits, at most two seconds, for the files being written, so that
// a process that exits on the error it got still leaves them.
func (f *Files) Await() {
	f.mu.Lock()
	pending := f.pending
	f.pending = nil
	f.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	timer := time.NewTimer(fileWait)
	defer timer.Stop()
	for _, done := range pending {
		select {
		case <-done:
		case <-timer.C:
			return
		}
	}
}
