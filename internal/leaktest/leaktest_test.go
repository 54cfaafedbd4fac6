package leaktest

import (
	"testing"
	"time"
)

// TestCheckWaits checks that a goroutine that stops soon after the test's
// other cleanups is not reported.
func TestCheckWaits(t *testing.T) {
	t.Run("stops late", func(t *testing.T) {
		Check(t)
		stop := make(chan struct{})
		go func() { <-stop }()
		t.Cleanup(func() { time.AfterFunc(20*time.Millisecond, func() { close(stop) }) })
	})
}
