//go:build linux

package nvl

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// TestPolling checks that a goroutine that polls takes the frames itself,
// in order with those the server delivers, and that once it stops, pauses
// or parks, every frame still arrives: the server takes the reading back,
// at once or after the linger, and nothing waits unseen.
func TestPolling(t *testing.T) {
	for _, spin := range []time.Duration{0, 50 * time.Microsecond} {
		t.Run(fmt.Sprintf("spin=%v", spin), func(t *testing.T) {
			d, a, _, ar := pair(t, New(WithSpin(spin)))
			// asked hears of a's server asking for doorbells.
			asked := make(chan struct{}, 1)
			hook := func(c *conn) {
				if c == a {
					select {
					case asked <- struct{}{}:
					default:
					}
				}
			}
			doorbellsAsked.Store(&hook)
			defer doorbellsAsked.Store(nil)
			sent := 0
			send := func(n int) {
				t.Helper()
				for range n {
					if err := d.Send(transport.Frame{Header: testHeader(sent), Payload: []byte{byte(sent)}}); err != nil {
						t.Fatal(err)
					}
					sent++
				}
			}
			// Polled: the poller takes what comes while it polls.
			a.Polling(true)
			send(10)
			deadline := time.Now().Add(10 * time.Second)
			for len(snapshot(ar)) < sent && time.Now().Before(deadline) {
				a.Poll()
			}
			// Paused, the server lingers, then reads again.
			a.Paused()
			select { // an ask from before the pause
			case <-asked:
			default:
			}
			send(10)
			ar.WaitFrames(t, sent)
			// Once the linger is over the server asks for doorbells; then
			// polled and stopped (parked): the server reads what follows.
			select {
			case <-asked:
			case <-time.After(10 * time.Second):
				t.Fatal("the idle server never asked for doorbells")
			}
			a.Polling(true)
			send(5)
			for range 100 {
				a.Poll()
			}
			a.Polling(false)
			send(5)
			frames := ar.WaitFrames(t, sent)
			for i, f := range frames {
				if f.Header != testHeader(i) || !bytes.Equal(f.Payload, []byte{byte(i)}) {
					t.Fatalf("frame %d: %+v %v, want header %+v and payload [%d]", i, f.Header, f.Payload, testHeader(i), i)
				}
			}
		})
	}
}

// TestPollAfterClose checks that a poller of a closed connection takes
// nothing and blocks nothing.
func TestPollAfterClose(t *testing.T) {
	d, a, _, ar := pair(t, New())
	a.Polling(true)
	d.Close()
	ar.WaitError(t)
	<-a.Drained()
	if a.Poll() {
		t.Fatal("a poll of a closed connection took something")
	}
	a.Polling(false)
}

func snapshot(r interface {
	Snapshot() ([]transport.Frame, []error)
}) []transport.Frame {
	frames, _ := r.Snapshot()
	return frames
}
