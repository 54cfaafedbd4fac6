package lazy_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
)

// TestLentBeforeConnected: a lent frame sent before the connection is up
// waits as it is, lent, and the connection takes it over: over a
// borrowing network the payload is never copied, so a change made while
// the dial is held shows at the peer, and Sent is called once, after the
// frame left. Over inproc, which copies, it arrives all the same.
func TestLentBeforeConnected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		borrow bool
	}{{"inproc", false}, {"tcp", true}} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			inner := networks[0].new()
			if tc.borrow {
				inner = networks[1].new()
			}
			p := newProbe(inner)
			var nw transport.Network = p
			if tc.borrow {
				nw = borrowingProbe{p}
			}
			gt := newGate()
			p.gate = gt.wait
			c := newCluster(t, nw, 2, clusterOptions{})
			if _, ok := c.conns[0][1].(transport.Borrower); ok != tc.borrow {
				t.Fatalf("conn is a Borrower: %v, want %v", ok, tc.borrow)
			}
			gt.hold(c.addrs[1])

			payload := []byte("lent: first")
			sent := make(chan struct{}, 2)
			err := c.conns[0][1].Send(transport.Frame{
				Header:  header(0, 1, 0, 0),
				Payload: payload,
				Sent:    func() { sent <- struct{}{} },
			})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			gt.waitArrived(t, c.addrs[1])
			select {
			case <-sent:
				t.Fatal("Sent called while the frame waits for the connection: it was copied or dropped")
			default:
			}
			want := payload
			if tc.borrow {
				// Still ours to read only; the test peeks behind the
				// contract to see that nobody copied it.
				copy(payload, "lent: again")
				want = []byte("lent: again")
			}
			gt.release(c.addrs[1])

			got := c.recs[1][0].WaitFrames(t, 1)[0]
			if !bytes.Equal(got.Payload, want) {
				t.Errorf("peer got %q, want %q", got.Payload, want)
			}
			select {
			case <-sent:
			case <-time.After(waitTimeout):
				t.Fatal("Sent never called")
			}
			c.closeAll()
			select {
			case <-sent:
				t.Error("Sent called twice")
			case <-time.After(10 * time.Millisecond):
			}
			c.check()
		})
	}
}
