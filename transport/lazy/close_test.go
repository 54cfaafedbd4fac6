package lazy_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
)

// TestCloseWhileDialling: frames sent before Close, while the dial is
// still in flight, reach the peer before its error; the closing side's
// handler gets one error, and Drained closes once they have left.
func TestCloseWhileDialling(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		const n = 20
		nw := newProbe(newNetwork())
		gt := newGate()
		nw.gate = gt.wait
		c := newCluster(t, nw, 2, clusterOptions{})
		gt.hold(c.addrs[1])
		for i := range n {
			c.conns[0][1].Send(frame(0, 1, 0, i))
		}
		gt.waitArrived(t, c.addrs[1])
		c.conns[0][1].Close()
		if err := c.conns[0][1].Send(frame(0, 1, 0, n)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send after Close: %v, want ErrClosed", err)
		}
		drained := c.conns[0][1].(transport.Drainer).Drained()
		select {
		case <-drained:
			t.Error("Drained before the queued frames left")
		default:
		}
		gt.release(c.addrs[1])

		got, err := c.recs[1][0].WaitError(t)
		checkFrames(t, got, 0, 1, map[int]int{0: n})
		if !errors.Is(err, transport.ErrClosed) {
			t.Errorf("peer's error %v does not wrap ErrClosed", err)
		}
		if _, err := c.recs[0][1].WaitError(t); !errors.Is(err, transport.ErrClosed) || !strings.Contains(err.Error(), "closed locally") {
			t.Errorf("closer's error %v: want a local close wrapping ErrClosed", err)
		}
		select {
		case <-drained:
		case <-time.After(waitTimeout):
			t.Error("Drained not closed after the frames left")
		}
		if c.groups[0].Up(1) {
			t.Error("Up after Close")
		}
		c.check()
	})
}

// TestCloseUnused: closing a conn never used touches nothing on the
// network; the peer's later dial is refused for good, and fails at once.
func TestCloseUnused(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		nw := newProbe(newNetwork())
		c := newCluster(t, nw, 2, clusterOptions{dialTimeout: waitTimeout})
		conn := c.conns[0][1]
		if err := conn.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := conn.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		select {
		case <-conn.(transport.Drainer).Drained():
		default:
			t.Error("Drained not closed at once")
		}
		if _, err := c.recs[0][1].WaitError(t); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("handler's error %v does not wrap ErrClosed", err)
		}
		var lent lender
		if err := conn.Send(lent.frame(0, 1, 0)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send after Close: %v, want ErrClosed", err)
		}
		if n := lent.returned.Load(); n != 1 {
			t.Errorf("Sent called %d times for the refused frame", n)
		}
		if d, a := nw.dials.Load(), nw.accepted.Load(); d != 0 || a != 0 {
			t.Errorf("%d dials and %d accepted connections after closing an unused conn", d, a)
		}

		start := time.Now()
		c.conns[1][0].Send(frame(1, 0, 0, 0))
		_, err := c.recs[1][0].WaitError(t)
		checkEnd(t, err, "0", c.addrs[0], transport.ErrRefused)
		if elapsed := time.Since(start); elapsed > waitTimeout/2 {
			t.Errorf("the refused dial failed after %v, as if it waited for the dial timeout", elapsed)
		}
		c.check()
	})
}

// TestGroupClose: closing every member ends every conn, with each peer
// told after the frames sent before, and leaves no goroutine behind; a
// closed group hands out no conns.
func TestGroupClose(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		const n = 4
		c := newCluster(t, newNetwork(), n, clusterOptions{})
		for i := range n {
			for j := range n {
				if i != j {
					c.conns[i][j].Send(frame(i, j, 0, 0))
				}
			}
		}
		for i := range n {
			for j := range n {
				if i != j {
					c.recs[i][j].WaitFrames(t, 1)
				}
			}
		}
		c.groups[0].Close()
		for j := 1; j < n; j++ {
			if got, err := c.recs[j][0].WaitError(t); len(got) != 1 || !errors.Is(err, transport.ErrClosed) {
				t.Errorf("member %d: %d frames, then %v; want 1, then ErrClosed", j, len(got), err)
			}
			if c.groups[0].Up(j) || c.groups[j].Up(0) {
				t.Errorf("pair 0-%d Up after member 0 closed", j)
			}
		}
		if _, err := c.groups[0].Conn(1); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Conn after Close: %v, want ErrClosed", err)
		}
		if err := c.conns[0][1].Send(frame(0, 1, 0, 1)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send after the group closed: %v, want ErrClosed", err)
		}
		c.closeAll()
		for i := range n {
			for j := range n {
				if i != j {
					<-c.conns[i][j].(transport.Drainer).Drained()
				}
			}
		}
		c.check()
	})
}

// TestGroupCloseWhileCrossing: a member that sends for the first time and
// closes at once, while the peer dials it too, still delivers: if its dial
// is refused for the peer's, its listener stays open for that dial.
func TestGroupCloseWhileCrossing(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		for range 20 {
			c := newCluster(t, newNetwork(), 2, clusterOptions{})
			c.conns[0][1].Send(frame(0, 1, 0, 0))
			c.conns[1][0].Send(frame(1, 0, 0, 0))
			c.groups[1].Close()
			checkFrames(t, c.recs[0][1].WaitFrames(t, 1), 1, 0, map[int]int{0: 1})
			c.closeAll()
			c.check()
		}
	})
}

// TestGroupCloseGivesUp: a closed group whose frames wait for a peer that
// never answers gives up on them within the dial timeout: they are given
// back, Drained closes, the listener closes and nothing is left running.
func TestGroupCloseGivesUp(t *testing.T) {
	leaktest.Check(t)
	const timeout = 200 * time.Millisecond
	nw := transport.NewInproc()
	addrs := []string{"", rawPeer(t, nw, func(transport.Conn, []byte) {})}
	g := member(t, nw, 0, addrs, timeout)
	c, _ := g.Conn(1)
	var lent lender
	c.Send(lent.frame(0, 1, 0))
	start := time.Now()
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// A hello of another group probes the listener and changes nothing.
	if u, err := nw.Dial(t.Context(), addrs[0], hello(groupID+1, 1)); err != nil {
		t.Errorf("listener closed while frames wait for the peer: %v", err)
	} else {
		u.Close()
	}
	select {
	case <-c.(transport.Drainer).Drained():
	case <-time.After(waitTimeout):
		t.Fatal("Drained not closed after the dial timeout")
	}
	if elapsed := time.Since(start); elapsed < timeout/2 {
		t.Errorf("gave up after %v, before the dial timeout of %v", elapsed, timeout)
	}
	if n := lent.returned.Load(); n != 1 {
		t.Errorf("Sent called %d times for 1 lent frame", n)
	}
	eventually(t, "the listener to close", func() bool {
		u, err := nw.Dial(t.Context(), addrs[0], hello(groupID+1, 1))
		if err == nil {
			u.Close()
		}
		return errors.Is(err, transport.ErrRefused)
	})
}
