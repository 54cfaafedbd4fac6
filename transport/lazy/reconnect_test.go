package lazy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/lazy"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// TestReconnectAfterFailure: once the connection fails, Conn returns a
// new conn on both sides, whichever asks first, and the pair connects
// again and carries frames both ways; the failed conns stay failed. No
// address is resolved twice, and the member that was dialled knows its
// peer's from the hello, so reconnecting needs no rendezvous store.
func TestReconnectAfterFailure(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		nw := newProbe(newNetwork())
		c := newCluster(t, nw, 2, clusterOptions{})
		if err := c.conns[0][1].Send(frame(0, 1, 0, 0)); err != nil {
			t.Fatal(err)
		}
		c.recs[1][0].WaitFrames(t, 1)
		nw.reset()
		for i, j := range []int{1, 0} {
			if _, err := c.recs[i][j].WaitError(t); !errors.Is(err, transport.ErrClosed) {
				t.Fatalf("member %d: the reset ended its conn with %v, want ErrClosed", i, err)
			}
		}
		if err := c.conns[0][1].Send(frame(0, 1, 0, 1)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send on the failed conn: %v, want ErrClosed", err)
		}

		again := make([]transport.Conn, 2)
		recs := make([]*transporttest.Recorder, 2)
		for i, j := range []int{1, 0} {
			conn, err := c.groups[i].Conn(j)
			if err != nil {
				t.Fatalf("member %d: Conn(%d) after the failure: %v", i, j, err)
			}
			if conn == c.conns[i][j] {
				t.Fatalf("member %d: Conn(%d) returned the failed conn", i, j)
			}
			if same, _ := c.groups[i].Conn(j); same != conn {
				t.Errorf("member %d: a second Conn(%d) returned another conn", i, j)
			}
			again[i], recs[i] = conn, transporttest.NewRecorder()
			conn.Start(recs[i])
		}
		const n = 10
		for k := range n {
			if err := again[0].Send(frame(0, 1, 0, k)); err != nil {
				t.Fatal(err)
			}
			if err := again[1].Send(frame(1, 0, 0, k)); err != nil {
				t.Fatal(err)
			}
		}
		checkFrames(t, recs[1].WaitFrames(t, n), 0, 1, map[int]int{0: n})
		checkFrames(t, recs[0].WaitFrames(t, n), 1, 0, map[int]int{0: n})
		for i, j := range []int{1, 0} {
			if got := c.connects[i][j].Load(); got != 2 {
				t.Errorf("member %d: OnConnect(%d) called %d times, want 2", i, j, got)
			}
		}
		if r0, r1 := c.resolves[0][1].Load(), c.resolves[1][0].Load(); r0 != 1 || r1 != 0 {
			t.Errorf("Resolve called %d times by the dialler and %d by the member dialled, want 1 and 0", r0, r1)
		}
		c.check()
		recs[0].Check(t)
		recs[1].Check(t)
	})
}

// TestNewerDialSupersedes: a peer that dials again from a newer conn says
// it lost the connection we hold. Its dial waits until ours fails, which
// it does here when the peer's end closes; then a new conn welcomes the
// dial with its own generation. A late dial from the conn we are
// connected to is closed unanswered.
func TestNewerDialSupersedes(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		nw := newNetwork()
		c := newCluster(t, nw, 2, clusterOptions{})
		if err := c.conns[1][0].Send(frame(1, 0, 0, 0)); err != nil {
			t.Fatal(err)
		}
		c.recs[0][1].WaitFrames(t, 1)

		stale, err := nw.Dial(t.Context(), c.addrs[0], hello(groupID, 1))
		if err != nil {
			t.Fatal(err)
		}
		rs := transporttest.NewRecorder()
		stale.Start(rs)
		if got, _ := rs.WaitError(t); len(got) != 0 {
			t.Errorf("a stale dial was answered with %+v", got[0].Header)
		}
		stale.Close()
		if !c.groups[0].Up(1) {
			t.Fatal("a stale dial took the connection down")
		}

		// Two newer dials: one waits for the live connection to fail, and
		// the other, meanwhile, is closed at once, which shows that the
		// first is held, unanswered.
		var dials [2]transport.Conn
		var recs [2]endedRecorder
		for i := range dials {
			d, err := nw.Dial(t.Context(), c.addrs[0], helloGen(groupID, 1, 2))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			dials[i], recs[i] = d, endedRecorder{transporttest.NewRecorder(), make(chan struct{})}
			d.Start(recs[i])
		}
		held := 0
		select {
		case <-recs[0].ended:
			held = 1
		case <-recs[1].ended:
		case <-time.After(time.Minute):
			t.Fatal("neither of two newer dials was closed")
		}
		newer, rn := dials[held], recs[held].Recorder
		if got, _ := rn.Snapshot(); len(got) != 0 || !c.groups[0].Up(1) {
			t.Fatalf("a newer dial to a live connection was answered (%d frames) or took it down", len(got))
		}
		c.conns[1][0].Close() // the old connection fails on our side
		welcome := rn.WaitFrames(t, 1)[0]
		if want := (transport.Header{Comm: groupID, Kind: lazy.KindWelcome, Seq: 2}); welcome.Header != want {
			t.Errorf("a newer dial was answered %+v, want %+v", welcome.Header, want)
		}
		if _, err := c.recs[0][1].WaitError(t); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("the old conn ended with %v, want ErrClosed", err)
		}
		conn, err := c.groups[0].Conn(1)
		if err != nil {
			t.Fatal(err)
		}
		r := transporttest.NewRecorder()
		conn.Start(r)
		if err := newer.Send(frame(1, 0, 0, 0)); err != nil {
			t.Fatal(err)
		}
		checkFrames(t, r.WaitFrames(t, 1), 1, 0, map[int]int{0: 1})
		if err := conn.Send(frame(0, 1, 0, 0)); err != nil {
			t.Fatal(err)
		}
		checkFrames(t, rn.WaitFrames(t, 2)[1:], 0, 1, map[int]int{0: 1})
	})
}

// TestForgedNewerDialRefused: dials claiming a newer conn of the peer's
// never take down a live link: the first waits the dial timeout and is
// closed unanswered, a second meanwhile at once, and the link carries
// frames throughout.
func TestForgedNewerDialRefused(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		nw := newNetwork()
		c := newCluster(t, nw, 2, clusterOptions{dialTimeout: 300 * time.Millisecond})
		if err := c.conns[1][0].Send(frame(1, 0, 0, 0)); err != nil {
			t.Fatal(err)
		}
		c.recs[0][1].WaitFrames(t, 1)

		var recs []*transporttest.Recorder
		for gen := uint32(2); gen <= 3; gen++ {
			forged, err := nw.Dial(t.Context(), c.addrs[0], helloGen(groupID, 1, gen))
			if err != nil {
				t.Fatal(err)
			}
			defer forged.Close()
			r := transporttest.NewRecorder()
			forged.Start(r)
			recs = append(recs, r)
		}
		for i, r := range recs {
			if got, _ := r.WaitError(t); len(got) != 0 {
				t.Errorf("forged dial %d was answered with %+v", i, got[0].Header)
			}
		}
		if !c.groups[0].Up(1) || !c.groups[1].Up(0) {
			t.Fatal("a forged dial took the connection down")
		}
		if err := c.conns[1][0].Send(frame(1, 0, 0, 1)); err != nil {
			t.Fatal(err)
		}
		if err := c.conns[0][1].Send(frame(0, 1, 0, 0)); err != nil {
			t.Fatal(err)
		}
		checkFrames(t, c.recs[0][1].WaitFrames(t, 2), 1, 0, map[int]int{0: 2})
		checkFrames(t, c.recs[1][0].WaitFrames(t, 1), 0, 1, map[int]int{0: 1})
	})
}

// TestClosedConnRefusesRedial: a conn closed on purpose stays closed: the
// peer's new conn is refused for good, with ErrRefused.
func TestClosedConnRefusesRedial(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		c := newCluster(t, newNetwork(), 2, clusterOptions{})
		if err := c.conns[1][0].Send(frame(1, 0, 0, 0)); err != nil {
			t.Fatal(err)
		}
		c.recs[0][1].WaitFrames(t, 1)
		c.conns[0][1].Close()
		c.recs[1][0].WaitError(t)

		conn, err := c.groups[1].Conn(0)
		if err != nil {
			t.Fatal(err)
		}
		r := transporttest.NewRecorder()
		conn.Start(r)
		if err := conn.Send(frame(1, 0, 0, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.WaitError(t); !errors.Is(err, transport.ErrRefused) {
			t.Errorf("a redial to a conn closed on purpose ended with %v, want ErrRefused", err)
		}
	})
}

// endedRecorder is a Recorder that also closes ended at the connection's
// end, for a test to select on.
type endedRecorder struct {
	*transporttest.Recorder
	ended chan struct{}
}

func (r endedRecorder) HandleError(err error) {
	r.Recorder.HandleError(err)
	close(r.ended)
}
