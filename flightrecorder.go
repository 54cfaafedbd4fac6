package gocomms

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"
)

// DefaultFlightRecordSize is how many operations a communicator's flight
// recorder keeps when TORCHCOMM_FR_BUFFER_SIZE is unset (torchcomms'
// default).
const DefaultFlightRecordSize = 2000

// FlightState is where a recorded operation stands.
type FlightState string

// The states of a recorded operation: the first two while it is in flight,
// one of the others once it has ended.
const (
	FlightIssued    FlightState = "issued"
	FlightStarted   FlightState = "started"
	FlightCompleted FlightState = "completed"
	FlightFailed    FlightState = "failed"
	FlightTimedOut  FlightState = "timed_out"
	FlightAborted   FlightState = "aborted"
)

// FlightEntry is one operation as a flight recorder saw it. Times are when
// the recorder observed each event, which may be a little after it
// happened; a zero Started means the start was not observed (the operation
// ended before it ran, or was rejected).
type FlightEntry struct {
	ID          uint64      `json:"op_id"`
	Seq         uint64      `json:"seq"`
	Op          OpName      `json:"op"`
	DType       string      `json:"dtype,omitempty"`
	Reduce      string      `json:"reduce_op,omitempty"`
	Root        int         `json:"root"`            // -1: the operation has none
	Peers       []int       `json:"peers,omitempty"` // point-to-point messages' peers, in order
	InputNumel  int         `json:"input_numel"`
	OutputNumel int         `json:"output_numel"`
	InputBytes  int         `json:"input_bytes"`
	OutputBytes int         `json:"output_bytes"`
	State       FlightState `json:"state"`
	Issued      time.Time   `json:"issued"`
	Started     time.Time   `json:"started,omitzero"`
	Ended       time.Time   `json:"ended,omitzero"`
	Error       string      `json:"error,omitempty"`
	ErrorRanks  []int       `json:"error_ranks,omitempty"` // the ranks the error names
}

// FlightRecorder keeps the last operations of a communicator in a ring, as
// torchcomms' FlightRecorderHook, so that a hang or a failure can be traced
// to the operation and the ranks behind it. It is safe for concurrent use.
// Every Comm has one (Comm.FlightRecord); another can be installed with
// Comm.RegisterIssueHook(r.Record).
type FlightRecorder struct {
	capacity int

	mu   sync.Mutex
	ring []flightSlot // entry k lives at k % capacity; grows up to capacity
	next uint64       // entries recorded so far
}

type flightSlot struct {
	entry FlightEntry
	// work is the operation until its end is recorded, so that a snapshot
	// taken once Wait has returned shows the end even if the Work's end
	// hooks have not run yet; it is dropped then, not to hold its tensors.
	work *Work
}

// NewFlightRecorder returns a recorder keeping the last capacity
// operations; capacity 0 (or less) records nothing.
func NewFlightRecorder(capacity int) *FlightRecorder {
	return &FlightRecorder{capacity: max(capacity, 0)}
}

// Capacity returns how many operations r keeps.
func (r *FlightRecorder) Capacity() int { return r.capacity }

// Record records op and follows w until it ends. It is a IssueHook.
func (r *FlightRecorder) Record(op *Op, w *Work) {
	if op == nil || w == nil {
		return
	}
	k, ok := r.add(op, w)
	if !ok {
		return
	}
	// Registered after issue, so the start and end may already be past:
	// the Work then runs them at once, in this order.
	w.OnStart(func(*Work) { r.update(k, (*flightSlot).start) })
	w.OnEnd(func(*Work) { r.update(k, (*flightSlot).settle) })
}

// track records op, which is about to be issued, and has w tell r of its
// start and end: the communicator's own recorder, without hooks.
func (r *FlightRecorder) track(op *Op, w *Work) {
	if k, ok := r.add(op, w); ok {
		w.flight, w.flightSlot = r, k
	}
}

// recordRejected records an operation that ended before it was issued.
func (r *FlightRecorder) recordRejected(op *Op, w *Work) {
	if k, ok := r.add(op, w); ok {
		r.update(k, (*flightSlot).settle)
	}
}

// start records that the slot's operation started.
func (s *flightSlot) start() {
	if s.entry.State == FlightIssued {
		s.entry.State, s.entry.Started = FlightStarted, time.Now()
	}
}

// startAtIssue records the start of the slot's operation as its issue:
// it started while being issued.
func (s *flightSlot) startAtIssue() {
	if s.entry.State == FlightIssued {
		s.entry.State, s.entry.Started = FlightStarted, s.entry.Issued
	}
}

// settle records the end of the slot's Work, if it has ended.
func (s *flightSlot) settle() {
	if s.work == nil {
		return
	}
	switch s.work.Status() { // not Done: a channel would be made for nothing
	case Completed, TimedOut, Failed:
	default:
		return
	}
	err := s.work.Err()
	s.work = nil
	s.entry.State, s.entry.Ended = terminalState(err), time.Now()
	if err == nil {
		return
	}
	s.entry.Error = err.Error()
	var oe *OpError
	if errors.As(err, &oe) {
		s.entry.ErrorRanks = slices.Clone(oe.Ranks)
	}
}

func terminalState(err error) FlightState {
	switch {
	case err == nil:
		return FlightCompleted
	case errors.Is(err, ErrTimeout):
		return FlightTimedOut
	case errors.Is(err, ErrAborted):
		return FlightAborted
	}
	return FlightFailed
}

// add stores a new entry for op and returns its number. An entry that
// falls off the ring lends its Peers' room to the new one.
func (r *FlightRecorder) add(op *Op, w *Work) (uint64, bool) {
	if r.capacity == 0 {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.next
	r.next++
	// The ring grows as it fills, so a large capacity costs nothing unused.
	if len(r.ring) < r.capacity {
		r.ring = append(r.ring, flightSlot{})
	}
	s := &r.ring[k%uint64(r.capacity)]
	*s = flightSlot{entry: newFlightEntry(op, s.entry.Peers[:0]), work: w}
	return k, true
}

// update applies f to slot k unless the ring has dropped it.
func (r *FlightRecorder) update(k uint64, f func(*flightSlot)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next-k <= uint64(len(r.ring)) {
		f(&r.ring[k%uint64(r.capacity)])
	}
}

// newFlightEntry returns the entry of op, issued now, appending its peers
// to peers.
func newFlightEntry(op *Op, peers []int) FlightEntry {
	e := FlightEntry{ID: op.ID, Seq: op.Seq, Op: op.Name, Root: op.Root, State: FlightIssued, Issued: time.Now(), Peers: peers}
	if op.DType.Valid() {
		e.DType = op.DType.String()
	}
	if op.Reduce.Valid() {
		e.Reduce = op.Reduce.String()
	}
	for _, t := range op.Inputs {
		e.InputNumel += t.Numel()
		e.InputBytes += t.NBytes()
	}
	for _, t := range op.Outputs {
		e.OutputNumel += t.Numel()
		e.OutputBytes += t.NBytes()
	}
	for _, m := range op.P2P {
		e.Peers = append(e.Peers, m.Peer)
		if m.Send {
			e.InputNumel += m.Tensor.Numel()
			e.InputBytes += m.Tensor.NBytes()
		} else {
			e.OutputNumel += m.Tensor.Numel()
			e.OutputBytes += m.Tensor.NBytes()
		}
	}
	return e
}

// Entries returns the recorded operations, oldest first.
func (r *FlightRecorder) Entries() []FlightEntry {
	entries, _ := r.snapshot()
	return entries
}

// Dropped returns how many entries the ring has overwritten so far.
func (r *FlightRecorder) Dropped() uint64 {
	_, dropped := r.snapshot()
	return dropped
}

func (r *FlightRecorder) snapshot() ([]FlightEntry, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := uint64(len(r.ring))
	entries := make([]FlightEntry, 0, n)
	for k := r.next - n; k < r.next; k++ {
		s := &r.ring[k%uint64(r.capacity)]
		s.settle()
		e := s.entry
		e.Peers, e.ErrorRanks = slices.Clone(e.Peers), slices.Clone(e.ErrorRanks)
		entries = append(entries, e)
	}
	return entries, r.next - n
}

// flightRecordSize is TORCHCOMM_FR_BUFFER_SIZE, or the default with an
// error saying why the value was not taken.
func flightRecordSize() (int, error) {
	v, ok := os.LookupEnv("TORCHCOMM_FR_BUFFER_SIZE")
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultFlightRecordSize, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return DefaultFlightRecordSize, fmt.Errorf("TORCHCOMM_FR_BUFFER_SIZE=%q is not a number of entries (0 disables the flight recorder)", v)
	}
	return n, nil
}

// FlightDump is one communicator's flight record, as DumpFlightRecord and
// DumpFlightRecords write it.
type FlightDump struct {
	Comm     string        `json:"comm"`
	Rank     int           `json:"rank"`
	Size     int           `json:"size"`
	Ranks    []int         `json:"ranks"` // the global rank of each member, by rank
	Backend  string        `json:"backend"`
	Capacity int           `json:"capacity"`
	Dropped  uint64        `json:"dropped"` // entries overwritten so far
	Entries  []FlightEntry `json:"entries"` // oldest first
}

// startFlightRecorder gives a new communicator its recorder, sized by
// TORCHCOMM_FR_BUFFER_SIZE, and lists it for DumpFlightRecords.
func (c *Comm) startFlightRecorder() {
	n, err := flightRecordSize()
	if err != nil {
		c.cfg.Logger.Warn("flight recorder: using the default size", "size", n, "err", err)
	}
	c.flight = NewFlightRecorder(n) // Comm.issue tracks each operation
	liveComms.Lock()
	defer liveComms.Unlock()
	if len(liveComms.comms) == cap(liveComms.comms) {
		liveComms.forget(nil) // before growing: amortised, the list stays in proportion to the live
	}
	liveComms.comms = append(liveComms.comms, weak.Make(c))
}

// stopListing removes a finalized communicator from DumpFlightRecords.
func (c *Comm) stopListing() {
	liveComms.Lock()
	defer liveComms.Unlock()
	liveComms.forget(c)
}

// liveComms are the communicators of this process not yet finalized, in
// creation order. It holds them weakly: one dropped without Finalize (a
// simulated job's, say) goes with its memory.
var liveComms liveList

type liveList struct {
	sync.Mutex
	comms []weak.Pointer[Comm]
}

// list returns the communicators listed and still alive, in creation order.
func (l *liveList) list() []*Comm {
	l.Lock()
	defer l.Unlock()
	comms := make([]*Comm, 0, len(l.comms))
	for _, p := range l.comms {
		if c := p.Value(); c != nil {
			comms = append(comms, c)
		}
	}
	return comms
}

// forget drops c and the communicators already collected from the list;
// the caller holds the lock.
func (l *liveList) forget(c *Comm) {
	l.comms = slices.DeleteFunc(l.comms, func(p weak.Pointer[Comm]) bool {
		x := p.Value()
		return x == nil || x == c
	})
}

// FlightRecord returns the communicator's last operations, oldest first:
// at most TORCHCOMM_FR_BUFFER_SIZE of them (2000 by default; 0 disables
// recording). Operations the communicator issues for itself (Split's
// exchanges) are not recorded, as hooks do not see them.
func (c *Comm) FlightRecord() []FlightEntry { return c.flight.Entries() }

// DumpFlightRecord writes the communicator's flight record to w as one
// line of JSON (a FlightDump).
func (c *Comm) DumpFlightRecord(w io.Writer) error {
	return writeJSONLine(w, c.flightDump())
}

func (c *Comm) flightDump() FlightDump {
	entries, dropped := c.flight.snapshot()
	return FlightDump{Comm: c.cfg.Name, Rank: c.cfg.Rank, Size: c.cfg.Size, Ranks: c.Ranks(), Backend: c.backendName,
		Capacity: c.flight.Capacity(), Dropped: dropped, Entries: entries}
}

// DumpFlightRecords writes the flight record of every communicator of this
// process to w, as one line of JSON: an array of FlightDump in creation
// order. A communicator is listed from its creation until Finalize.
func DumpFlightRecords(w io.Writer) error {
	comms := liveComms.list()
	dumps := make([]FlightDump, 0, len(comms))
	for _, c := range comms {
		dumps = append(dumps, c.flightDump())
	}
	return writeJSONLine(w, dumps)
}

// writeJSONLine writes v in one Write, so that a dump does not interleave
// with other output to the same stream.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("gocomms: flight record: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("gocomms: flight record: %w", err)
	}
	return nil
}
