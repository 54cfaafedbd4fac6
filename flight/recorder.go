package flight

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
)

// DefaultSize is how many operations a communicator's recorder keeps when
// TORCHCOMM_FR_BUFFER_SIZE is unset (torchcomms' default).
const DefaultSize = 2000

// State is where a recorded operation stands.
type State string

// The states of a recorded operation: the first two while it is in
// flight, one of the others once it has ended.
const (
	Issued    State = "issued"
	Started   State = "started"
	Completed State = "completed"
	Failed    State = "failed"
	TimedOut  State = "timed_out"
	Aborted   State = "aborted"
)

// Entry is one operation as a recorder saw it. Times are when the
// recorder observed each event, which may be a little after it happened;
// a zero Started means the start was not observed (the operation ended
// before it ran, or was rejected).
type Entry struct {
	ID          uint64         `json:"op_id"`
	Seq         uint64         `json:"seq"`
	Op          backend.OpName `json:"op"`
	DType       string         `json:"dtype,omitempty"`
	Reduce      string         `json:"reduce_op,omitempty"`
	Root        int            `json:"root"`            // -1: the operation has none
	Peers       []int          `json:"peers,omitempty"` // point-to-point messages' peers, in order
	InputNumel  int            `json:"input_numel"`
	OutputNumel int            `json:"output_numel"`
	InputBytes  int            `json:"input_bytes"`
	OutputBytes int            `json:"output_bytes"`
	State       State          `json:"state"`
	Issued      time.Time      `json:"issued"`
	Started     time.Time      `json:"started,omitzero"`
	Ended       time.Time      `json:"ended,omitzero"`
	Error       string         `json:"error,omitempty"`
	ErrorRanks  []int          `json:"error_ranks,omitempty"` // the ranks the error names
}

// Work is a recorded operation as the recorder follows it until its end
// is recorded.
type Work interface {
	// Ended reports whether the operation has ended, and with what error.
	Ended() (bool, error)
}

// Recorder keeps the last operations of a communicator in a ring. It is
// safe for concurrent use.
type Recorder struct {
	capacity int

	mu   sync.Mutex
	ring []slot // entry k lives at k % capacity; grows up to capacity
	next uint64 // entries recorded so far
}

type slot struct {
	entry Entry
	// work is the operation until its end is recorded, so that a snapshot
	// taken once its caller saw it end shows the end even if the End
	// that its end calls has not come yet; it is dropped then, not to
	// hold its tensors.
	work Work
}

// NewRecorder returns a recorder keeping the last capacity operations;
// capacity 0 (or less) records nothing.
func NewRecorder(capacity int) *Recorder {
	return &Recorder{capacity: max(capacity, 0)}
}

// Capacity returns how many operations r keeps.
func (r *Recorder) Capacity() int { return r.capacity }

// Add records op, issued now, which w follows, and returns its number
// for Start and End; ok is false if r records nothing. An entry that
// falls off the ring lends its Peers' room to the new one.
func (r *Recorder) Add(op *backend.Op, w Work) (k uint64, ok bool) {
	if r.capacity == 0 {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k = r.next
	r.next++
	// The ring grows as it fills, so a large capacity costs nothing unused.
	if len(r.ring) < r.capacity {
		r.ring = append(r.ring, slot{})
	}
	s := &r.ring[k%uint64(r.capacity)]
	*s = slot{entry: newEntry(op, s.entry.Peers[:0]), work: w}
	return k, true
}

// Start records that operation k started: now, or, atIssue, when it was
// issued, for one that started while being issued (no clock read for a
// moment later).
func (r *Recorder) Start(k uint64, atIssue bool) {
	r.update(k, func(s *slot) {
		if s.entry.State != Issued {
			return
		}
		s.entry.State, s.entry.Started = Started, s.entry.Issued
		if !atIssue {
			s.entry.Started = time.Now()
		}
	})
}

// End records the end of operation k, if its Work has ended.
func (r *Recorder) End(k uint64) { r.update(k, (*slot).settle) }

// update applies f to slot k unless the ring has dropped it.
func (r *Recorder) update(k uint64, f func(*slot)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next-k <= uint64(len(r.ring)) {
		f(&r.ring[k%uint64(r.capacity)])
	}
}

// settle records the end of the slot's Work, if it has ended.
func (s *slot) settle() {
	if s.work == nil {
		return
	}
	ended, err := s.work.Ended()
	if !ended {
		return
	}
	s.work = nil
	s.entry.State, s.entry.Ended = terminalState(err), time.Now()
	if err == nil {
		return
	}
	s.entry.Error = err.Error()
	var oe *commerr.OpError
	if errors.As(err, &oe) {
		s.entry.ErrorRanks = slices.Clone(oe.Ranks)
	}
}

func terminalState(err error) State {
	switch {
	case err == nil:
		return Completed
	case errors.Is(err, commerr.ErrTimeout):
		return TimedOut
	case errors.Is(err, commerr.ErrAborted):
		return Aborted
	}
	return Failed
}

// newEntry returns the entry of op, issued now, appending its peers to
// peers.
func newEntry(op *backend.Op, peers []int) Entry {
	e := Entry{ID: op.ID, Seq: op.Seq, Op: op.Name, Root: op.Root, State: Issued, Issued: time.Now(), Peers: peers}
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

// Snapshot returns the recorded operations, oldest first, and how many
// entries the ring has overwritten so far.
func (r *Recorder) Snapshot() (entries []Entry, dropped uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := uint64(len(r.ring))
	entries = make([]Entry, 0, n)
	for k := r.next - n; k < r.next; k++ {
		s := &r.ring[k%uint64(r.capacity)]
		s.settle()
		e := s.entry
		e.Peers, e.ErrorRanks = slices.Clone(e.Peers), slices.Clone(e.ErrorRanks)
		entries = append(entries, e)
	}
	return entries, r.next - n
}

// Dropped returns how many entries the ring has overwritten so far.
func (r *Recorder) Dropped() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next - uint64(len(r.ring))
}

// SizeFromEnv returns TORCHCOMM_FR_BUFFER_SIZE, or DefaultSize with an
// error saying why the value was not taken.
func SizeFromEnv() (int, error) {
	v, ok := os.LookupEnv("TORCHCOMM_FR_BUFFER_SIZE")
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultSize, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return DefaultSize, fmt.Errorf("TORCHCOMM_FR_BUFFER_SIZE=%q is not a number of entries (0 disables the flight recorder)", v)
	}
	return n, nil
}
