package transporttest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// waitTimeout bounds every wait in the suite; it only matters when a
// transport loses a frame or a notification, and then the test fails.
const waitTimeout = 30 * time.Second

// recorder is a Handler that keeps what it receives and notices contract
// violations (overlapping calls, frames after the error) instead of failing
// from a goroutine it does not own.
type recorder struct {
	// reply, if set, is called from HandleFrame before the frame is kept,
	// the way a link actor might answer at once; it may Send.
	reply func(f transport.Frame) error

	mu         sync.Mutex
	frames     []transport.Frame
	errs       []error
	violations []string
	inCall     bool
	changed    chan struct{} // a token after every event
}

var _ transport.Handler = (*recorder)(nil)

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}, 1)}
}

func (r *recorder) HandleFrame(f transport.Frame) {
	r.enter("HandleFrame")
	if len(r.errs) > 0 {
		r.violations = append(r.violations, fmt.Sprintf("HandleFrame(seq %d) after HandleError", f.Header.Seq))
	}
	r.mu.Unlock()

	var err error
	if r.reply != nil {
		err = r.reply(f)
	}

	r.mu.Lock()
	r.frames = append(r.frames, f)
	if err != nil {
		r.violations = append(r.violations, fmt.Sprintf("reply to seq %d: %v", f.Header.Seq, err))
	}
	r.leave()
}

func (r *recorder) HandleError(err error) {
	r.enter("HandleError")
	r.errs = append(r.errs, err)
	if len(r.errs) > 1 {
		r.violations = append(r.violations, fmt.Sprintf("HandleError called %d times: %v", len(r.errs), r.errs))
	}
	r.leave()
}

// enter locks r and marks a handler call in progress.
func (r *recorder) enter(what string) {
	r.mu.Lock()
	if r.inCall {
		r.violations = append(r.violations, what+" called while another handler call was in progress")
	}
	r.inCall = true
}

// leave ends a handler call, unlocks r and wakes a waiter.
func (r *recorder) leave() {
	r.inCall = false
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// wait blocks until cond, evaluated under r.mu, holds.
func (r *recorder) wait(t testing.TB, what string, cond func() bool) {
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

// waitFrames waits for n frames and fails early if the connection fails
// before they arrive.
func (r *recorder) waitFrames(t testing.TB, n int) []transport.Frame {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d frames", n), func() bool { return len(r.frames) >= n || len(r.errs) > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.frames) < n {
		t.Fatalf("connection failed after %d of %d frames: %v", len(r.frames), n, r.errs[0])
	}
	return append([]transport.Frame(nil), r.frames...)
}

// waitError waits for HandleError and returns its error.
func (r *recorder) waitError(t testing.TB) error {
	t.Helper()
	r.wait(t, "HandleError", func() bool { return len(r.errs) > 0 })
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs[0]
}

// snapshot returns what has been received so far.
func (r *recorder) snapshot() (frames []transport.Frame, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.Frame(nil), r.frames...), append([]error(nil), r.errs...)
}

// check reports contract violations seen so far.
func (r *recorder) check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Error(v)
	}
}
