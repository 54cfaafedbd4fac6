package gocomms

import (
	"errors"
	"io"

	"github.com/gocomms/gocomms/flight"
)

// DefaultFlightRecordSize is how many operations a communicator's flight
// recorder keeps when TORCHCOMM_FR_BUFFER_SIZE is unset (torchcomms'
// default).
const DefaultFlightRecordSize = flight.DefaultSize

// FlightState is where a recorded operation stands.
type FlightState = flight.State

// The states of a recorded operation: the first two while it is in flight,
// one of the others once it has ended.
const (
	FlightIssued    = flight.Issued
	FlightStarted   = flight.Started
	FlightCompleted = flight.Completed
	FlightFailed    = flight.Failed
	FlightTimedOut  = flight.TimedOut
	FlightAborted   = flight.Aborted
)

// FlightEntry is one operation as a flight recorder saw it. Times are when
// the recorder observed each event, which may be a little after it
// happened; a zero Started means the start was not observed (the operation
// ended before it ran, or was rejected).
type FlightEntry = flight.Entry

// FlightDump is one communicator's flight record, as DumpFlightRecord and
// DumpFlightRecords write it.
type FlightDump = flight.Dump

// FlightRecorder keeps the last operations of a communicator in a ring, as
// torchcomms' FlightRecorderHook, so that a hang or a failure can be traced
// to the operation and the ranks behind it. It is safe for concurrent use.
// Every Comm has one (Comm.FlightRecord); another can be installed with
// Comm.RegisterIssueHook(r.Record).
type FlightRecorder struct{ ring *flight.Recorder }

// NewFlightRecorder returns a recorder keeping the last capacity
// operations; capacity 0 (or less) records nothing.
func NewFlightRecorder(capacity int) *FlightRecorder {
	return &FlightRecorder{flight.NewRecorder(capacity)}
}

// Capacity returns how many operations r keeps.
func (r *FlightRecorder) Capacity() int { return r.ring.Capacity() }

// Record records op and follows w until it ends. It is a IssueHook.
func (r *FlightRecorder) Record(op *Op, w *Work) {
	if op == nil || w == nil {
		return
	}
	k, ok := r.ring.Add(op, (*flightWork)(w))
	if !ok {
		return
	}
	// Registered after issue, so the start and end may already be past:
	// the Work then runs them at once, in this order.
	w.OnStart(func(*Work) { r.ring.Start(k, false) })
	w.OnEnd(func(*Work) { r.ring.End(k) })
}

// track records op, which is about to be issued, and has w tell r of its
// start and end: the communicator's own recorder, without hooks, which
// would cost closures per operation.
func (r *FlightRecorder) track(op *Op, w *Work) {
	if k, ok := r.ring.Add(op, (*flightWork)(w)); ok {
		w.flight, w.flightSlot = r.ring, k
	}
}

// recordRejected records an operation that ended before it was issued.
func (r *FlightRecorder) recordRejected(op *Op, w *Work) {
	if k, ok := r.ring.Add(op, (*flightWork)(w)); ok {
		r.ring.End(k)
	}
}

// Entries returns the recorded operations, oldest first.
func (r *FlightRecorder) Entries() []FlightEntry {
	entries, _ := r.ring.Snapshot()
	return entries
}

// Dropped returns how many entries the ring has overwritten so far.
func (r *FlightRecorder) Dropped() uint64 { return r.ring.Dropped() }

// flightWork is a Work as its recorder follows it.
type flightWork Work

// Ended reads the status, not Done: a channel would be made for nothing.
func (w *flightWork) Ended() (bool, error) {
	switch (*Work)(w).Status() {
	case Completed, TimedOut, Failed:
		return true, w.err
	}
	return false, nil
}

// liveComms are the communicators of this process not yet finalized, for
// DumpFlightRecords.
var liveComms flight.Live[Comm]

// startFlightRecorder gives a new communicator its recorder, sized by
// TORCHCOMM_FR_BUFFER_SIZE, and lists it for DumpFlightRecords.
func (c *Comm) startFlightRecorder() {
	n, err := flight.SizeFromEnv()
	if err != nil {
		c.cfg.Logger.Warn("flight recorder: using the default size", "size", n, "err", err)
	}
	c.flight = NewFlightRecorder(n) // Comm.issue tracks each operation
	liveComms.Add(c)
}

// FlightRecord returns the communicator's last operations, oldest first:
// at most TORCHCOMM_FR_BUFFER_SIZE of them (2000 by default; 0 disables
// recording). Operations the communicator issues for itself (Split's
// exchanges) are not recorded, as hooks do not see them.
func (c *Comm) FlightRecord() []FlightEntry { return c.flight.Entries() }

// DumpFlightRecord writes the communicator's flight record to w as one
// line of JSON (a FlightDump).
func (c *Comm) DumpFlightRecord(w io.Writer) error {
	return flight.WriteDump(w, c.flightDump())
}

func (c *Comm) flightDump() FlightDump {
	entries, dropped := c.flight.ring.Snapshot()
	return FlightDump{Comm: c.cfg.Name, Rank: c.cfg.Rank, Size: c.cfg.Size, Ranks: c.Ranks(), Backend: c.backendName,
		Capacity: c.flight.Capacity(), Dropped: dropped, Entries: entries}
}

// DumpFlightRecords writes the flight record of every communicator of this
// process to w, as one line of JSON: an array of FlightDump in creation
// order. A communicator is listed from its creation until Finalize.
func DumpFlightRecords(w io.Writer) error {
	return flight.WriteDumps(w, flightDumps(liveComms.List()))
}

func flightDumps(comms []*Comm) []FlightDump {
	dumps := make([]FlightDump, len(comms))
	for i, c := range comms {
		dumps[i] = c.flightDump()
	}
	return dumps
}

// FlightRecordFile returns the file the flight records of global rank go
// to, as torchcomms names it: TORCHCOMM_FR_DUMP_TEMP_FILE followed by the
// rank, or, with TORCHCOMM_FR_DUMP_DYNAMIC_FILE_NAME true, the variable's
// value as it is. Both are read at each call. ok is false when
// TORCHCOMM_FR_DUMP_TEMP_FILE is unset or empty: then no file is written
// (torchcomms would fall back to ~/.cache/torch).
func FlightRecordFile(rank int) (name string, ok bool) { return flight.FileName(rank) }

// DumpFlightRecordFiles writes the flight records of every live
// communicator of this process to the files FlightRecordFile names, one
// per global rank, each a JSON array of FlightDump as DumpFlightRecords
// writes. It does nothing when TORCHCOMM_FR_DUMP_TEMP_FILE is unset.
func DumpFlightRecordFiles() error {
	if _, ok := flight.FileName(0); !ok {
		return nil
	}
	byRank := make(map[int][]*Comm)
	var ranks []int
	for _, c := range liveComms.List() {
		if g := c.ownGlobalRank(); g >= 0 {
			if byRank[g] == nil {
				ranks = append(ranks, g)
			}
			byRank[g] = append(byRank[g], c)
		}
	}
	var errs []error
	for _, g := range ranks {
		name, _ := flight.FileName(g)
		errs = append(errs, flight.WriteFile(name, flightDumps(byRank[g])))
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

// dumpFlightRecordFile writes, once per kind of event and without
// blocking, the flight records of this rank, the live communicators' of
// this process with its global rank, c's first, to the file
// FlightRecordFile names.
func (c *Comm) dumpFlightRecordFile(ev flight.Event) {
	g := c.ownGlobalRank()
	if g < 0 || c.flight.Capacity() == 0 {
		return
	}
	name, ok := flight.FileName(g)
	if !ok {
		return
	}
	c.files.Write(ev, name, func() []FlightDump {
		comms := []*Comm{c}
		for _, o := range liveComms.List() {
			if o != c && o.ownGlobalRank() == g {
				comms = append(comms, o)
			}
		}
		return flightDumps(comms)
	}, c.cfg.Logger)
}
