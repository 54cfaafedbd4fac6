package gocomms

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flight-record files are where operators look after a hang: with
// TORCHCOMM_FR_DUMP_TEMP_FILE set, a communicator whose operation times out,
// or that aborts, writes the flight records of its rank to a file, as
// torchcomms' FlightRecorderHook does from its abort hook.

// flightEvent is what made a communicator write its flight records.
type flightEvent uint8

const (
	flightOnTimeout flightEvent = iota
	flightOnAbort
	flightEvents
)

// flightDumpWait bounds how long a caller that gets a timeout or an abort,
// or Finalize, waits for the file being written: long enough for a local
// disk, short enough that a stuck file system does not hold up the caller.
const flightDumpWait = 2 * time.Second

// FlightRecordFile returns the file the flight records of global rank go
// to, as torchcomms names it: TORCHCOMM_FR_DUMP_TEMP_FILE followed by the
// rank, or, with TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME true, the variable's
// value as it is. Both are read at each call. ok is false when
// TORCHCOMM_FR_DUMP_TEMP_FILE is unset or empty: then no file is written
// (torchcomms would fall back to ~/.cache/torch).
func FlightRecordFile(rank int) (name string, ok bool) {
	prefix := os.Getenv("TORCHCOMM_FR_DUMP_TEMP_FILE")
	if prefix == "" {
		return "", false
	}
	if dynamic, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME"))); err == nil && dynamic {
		return prefix, true
	}
	return prefix + strconv.Itoa(rank), true
}

// DumpFlightRecordFiles writes the flight records of every live
// communicator of this process to the files FlightRecordFile names, one
// per global rank, each a JSON array of FlightDump as DumpFlightRecords
// writes. It does nothing when TORCHCOMM_FR_DUMP_TEMP_FILE is unset.
func DumpFlightRecordFiles() error {
	if _, ok := FlightRecordFile(0); !ok {
		return nil
	}
	byRank := make(map[int][]*Comm)
	var ranks []int
	for _, c := range liveComms.list() {
		if g := c.ownGlobalRank(); g >= 0 {
			if byRank[g] == nil {
				ranks = append(ranks, g)
			}
			byRank[g] = append(byRank[g], c)
		}
	}
	var errs []error
	for _, g := range ranks {
		name, _ := FlightRecordFile(g)
		errs = append(errs, writeFlightFile(name, byRank[g]))
	}
	return errors.Join(errs...)
}

// ownGlobalRank is this rank's global rank; -1 before a dynamic
// communicator has any.
func (c *Comm) ownGlobalRank() int {
	if c.cfg.Rank < 0 {
		return -1
	}
	return c.globalRank(c.cfg.Rank)
}

// flightFiles is a communicator's part in writing flight-record files.
type flightFiles struct {
	written [flightEvents]atomic.Bool // once per kind of event
	mu      sync.Mutex
	pending []chan struct{} // closed as each write ends
}

// dumpFlightRecordFile writes, once per kind of event and without
// blocking, the flight records of this rank, the live communicators' of
// this process with its global rank, c's first, to the file
// FlightRecordFile names. A failure is logged: the operation's own error
// is what its caller needs.
func (c *Comm) dumpFlightRecordFile(ev flightEvent) {
	g := c.ownGlobalRank()
	if g < 0 || c.flight.Capacity() == 0 {
		return
	}
	name, ok := FlightRecordFile(g)
	if !ok || !c.files.written[ev].CompareAndSwap(false, true) {
		return
	}
	done := make(chan struct{})
	c.files.mu.Lock()
	c.files.pending = append(c.files.pending, done)
	c.files.mu.Unlock()
	go func() {
		defer close(done)
		comms := []*Comm{c}
		for _, o := range liveComms.list() {
			if o != c && o.ownGlobalRank() == g {
				comms = append(comms, o)
			}
		}
		if err := writeFlightFile(name, comms); err != nil {
			c.cfg.Logger.Warn("flight recorder: dump not written", "err", err)
			return
		}
		c.cfg.Logger.Info("flight recorder: dumped", "file", name)
	}()
}

// awaitFlightRecordFiles waits, at most flightDumpWait, for the files c is
// writing, so that a process that exits on the error it got still leaves
// them.
func (c *Comm) awaitFlightRecordFiles() {
	c.files.mu.Lock()
	pending := c.files.pending
	c.files.pending = nil
	c.files.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	timer := time.NewTimer(flightDumpWait)
	defer timer.Stop()
	for _, done := range pending {
		select {
		case <-done:
		case <-timer.C:
			return
		}
	}
}

// writeFlightFile writes the flight records of comms to name through a
// temporary file beside it, so that a reader never sees half a dump.
func writeFlightFile(name string, comms []*Comm) error {
	dumps := make([]FlightDump, len(comms))
	for i, c := range comms {
		dumps[i] = c.flightDump()
	}
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
		err = writeJSONLine(f, dumps)
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
