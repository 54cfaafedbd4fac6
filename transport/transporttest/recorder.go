package transporttest

import (
	"fmt"
	"sync"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// waitTimeout bounds every wait in the suite; it only matters when a
// transport loses a frame or a notification, and then the test fails.
const waitTimeout = 30 * time.Second

// TB is what a Recorder needs of a test: *testing.T has it, and so has
// rapid's *T, which is no testing.TB.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Recorder is a Handler that keeps what it receives and notices contract
// violations (overlapping calls, frames after the error, two errors)
// instead of failing from a goroutine it does not own. The suite uses it,
// and so do the tests of transports built on others.
type Recorder struct {
	// Reply, if set, is called from HandleFrame before the frame is kept,
	// the way a link actor might answer at once; it may Send. An error it
	// returns is a violation.
	Reply func(f transport.Frame) error

	mu         sync.Mutex
	frames     []transport.Frame
	errs       []error
	violations []string
	inCall     bool
	changed    chan struct{} // a token after every event
}

var _ transport.Handler = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{changed: make(chan struct{}, 1)}
}

func (r *Recorder) HandleFrame(f transport.Frame) {
	r.enter("HandleFrame")
	if len(r.errs) > 0 {
		r.violations = append(r.violations, fmt.Sprintf("HandleFrame(seq %d) after HandleError", f.Header.Seq))
	}
	r.mu.Unlock()

	var err error
	if r.Reply != nil {
		err = r.Reply(f)
	}

	r.mu.Lock()
	r.frames = append(r.frames, transport.Detach(f)) // kept for the test to read
	if err != nil {
		r.violations = append(r.violations, fmt.Sprintf("reply to seq %d: %v", f.Header.Seq, err))
	}
	r.leave()
}

func (r *Recorder) HandleError(err error) {
	r.enter("HandleError")
	r.errs = append(r.errs, err)
	if len(r.errs) > 1 {
		r.violations = append(r.violations, fmt.Sprintf("HandleError called %d times: %v", len(r.errs), r.errs))
	}
	r.leave()
}

// enter locks r and marks a handler call in progress.
func (r *Recorder) enter(what string) {
	r.mu.Lock()
	if r.inCall {
		r.violations = append(r.violations, what+" called while another handler call was in progress")
	}
	r.inCall = true
}

// leave ends a handler call, unlocks r and wakes a waiter.
func (r *Recorder) leave() {
	r.inCall = false
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// wait blocks until cond, evaluated under r.mu, holds.
func (r *Recorder) wait(t TB, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		n, errs := len(r.frames), r.errs
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-timer.C:
			t.Fatalf("timed out after %v waiting for %s (have %d frames, errors %v)", waitTimeout, what, n, errs)
		}
	}
}

// WaitFrames waits for n frames, fails early if the connection fails
// before they arrive, and returns every frame so far.
func (r *Recorder) WaitFrames(t TB, n int) []transport.Frame {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d frames", n), func() bool { return len(r.frames) >= n || len(r.errs) > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.frames) < n {
		t.Fatalf("connection failed after %d of %d frames: %v", len(r.frames), n, r.errs[0])
	}
	return append([]transport.Frame(nil), r.frames...)
}

// WaitError waits for HandleError and returns the frames that came
// before it and its error.
func (r *Recorder) WaitError(t TB) ([]transport.Frame, error) {
	t.Helper()
	r.wait(t, "HandleError", func() bool { return len(r.errs) > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.Frame(nil), r.frames...), r.errs[0]
}

// Snapshot returns what has been received so far.
func (r *Recorder) Snapshot() (frames []transport.Frame, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.Frame(nil), r.frames...), append([]error(nil), r.errs...)
}

// Check reports the contract violations seen so far as test errors.
func (r *Recorder) Check(t TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Errorf("%s", v)
	}
}
