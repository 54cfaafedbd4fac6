package leaktest

import (
	"runtime"
	"testing"
	"time"
)

// timeout bounds the wait for goroutines that stop asynchronously, as
// stores and transports may after their Close.
const timeout = 10 * time.Second

// Check fails t if goroutines started during t outlive it by more than a
// few seconds. Call it before registering anything whose cleanup stops
// goroutines, so that its own cleanup runs after theirs.
func Check(t testing.TB) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(timeout)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines leaked: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
