package lazy_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/lazy"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// hello is the hello member from of the test group sends with its first
// conn to us.
func hello(id uint64, from uint32) []byte { return helloGen(id, from, 1) }

// helloGen is the hello of member from's conn of generation gen.
func helloGen(id uint64, from, gen uint32) []byte {
	b := binary.LittleEndian.AppendUint64(nil, id)
	b = binary.LittleEndian.AppendUint32(b, from)
	return binary.LittleEndian.AppendUint32(b, gen)
}

// nowhere returns an address of nw where nothing listens.
func nowhere(t *testing.T, nw transport.Network) string {
	t.Helper()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr()
	l.Close()
	return addr
}

// member starts a group over nw in which this member is self and the
// others are at addrs (addrs[self] is replaced by the listener's), closed
// after t.
func member(t *testing.T, nw transport.Network, self int, addrs []string, timeout time.Duration) *lazy.Group {
	t.Helper()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	addrs[self] = l.Addr()
	g, err := lazy.New(lazy.Config{Network: nw, Listener: l, ID: groupID, Self: self, Members: len(addrs), Resolve: fixed(addrs), DialTimeout: timeout})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// lender counts the Sent calls of the frames it lends.
type lender struct {
	lent, returned atomic.Int32
}

func (l *lender) frame(from, to, seq int) transport.Frame {
	f := frame(from, to, 0, seq)
	l.lent.Add(1)
	f.Sent = func() { l.returned.Add(1) }
	return f
}

// checkEnd checks that err ends a conn to peer at addr, naming both, and
// wraps each of want.
func checkEnd(t *testing.T, err error, peer, addr string, want ...error) {
	t.Helper()
	for _, w := range append(want, transport.ErrClosed) {
		if !errors.Is(err, w) {
			t.Errorf("error %q does not wrap %q", err, w)
		}
	}
	if !strings.Contains(err.Error(), "peer "+peer) || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name peer %s at %s", err, peer, addr)
	}
}

// TestResolveFails: a peer whose address cannot be resolved fails the
// conn with the resolver's error, naming the peer, and gives the queued
// frames back.
func TestResolveFails(t *testing.T) {
	leaktest.Check(t)
	nw := transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	lost := errors.New("store unreachable")
	g, err := lazy.New(lazy.Config{Network: nw, Listener: l, ID: groupID, Members: 2,
		Resolve: func(context.Context, int) (string, error) { return "", lost }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c, _ := g.Conn(1)
	r := transporttest.NewRecorder()
	c.Start(r)
	var lent lender
	c.Send(lent.frame(0, 1, 0))
	_, err = r.WaitError(t)
	if !errors.Is(err, lost) || !errors.Is(err, transport.ErrClosed) || !strings.Contains(err.Error(), "peer 1") {
		t.Errorf("error %q: want the resolver's, wrapping ErrClosed and naming peer 1", err)
	}
	if n := lent.returned.Load(); n != 1 {
		t.Errorf("Sent called %d times for 1 lent frame", n)
	}
}

// TestDialRefused: a dial to an address where nothing listens fails the
// conn: its handler gets one error naming the peer's index and address,
// queued frames are given back, lent ones through Sent, and later Sends
// fail.
func TestDialRefused(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		nw := newNetwork()
		addrs := []string{"", nowhere(t, nw)}
		g := member(t, nw, 0, addrs, 0)
		c, _ := g.Conn(1)
		r := transporttest.NewRecorder()
		c.Start(r)
		var lent lender
		c.Send(frame(0, 1, 0, 0))
		c.Send(lent.frame(0, 1, 1))
		c.Send(lent.frame(0, 1, 2))
		got, err := r.WaitError(t)
		if len(got) != 0 {
			t.Errorf("%d frames before the error", len(got))
		}
		checkEnd(t, err, "1", addrs[1], transport.ErrRefused)
		if n := lent.returned.Load(); n != 2 {
			t.Errorf("Sent called %d times for 2 lent frames", n)
		}
		if err := c.Send(lent.frame(0, 1, 3)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send after the failure: %v, want ErrClosed", err)
		}
		if n := lent.returned.Load(); n != 3 {
			t.Errorf("Sent called %d times for 3 lent frames", n)
		}
		if g.Up(1) {
			t.Error("Up after the failure")
		}
		d := c.(transport.Drainer).Drained()
		select {
		case <-d:
			t.Error("Drained before Close")
		default:
		}
		c.Close()
		<-d
		r.Check(t)
	})
}

// TestStartAfterFailure: a conn that fails before Start reports it at
// Start.
func TestStartAfterFailure(t *testing.T) {
	leaktest.Check(t)
	nw := transport.NewInproc()
	addrs := []string{"", nowhere(t, nw)}
	g := member(t, nw, 0, addrs, 0)
	c, _ := g.Conn(1)
	c.Send(frame(0, 1, 0, 0))
	eventually(t, "the conn to fail", func() bool { return c.Send(frame(0, 1, 0, 1)) != nil })
	r := transporttest.NewRecorder()
	c.Start(r)
	_, err := r.WaitError(t)
	checkEnd(t, err, "1", addrs[1], transport.ErrRefused)
	r.Check(t)
}

// rawPeer listens on nw like a member of the group would, and hands each
// connection dialled to it to answer, in a goroutine that ends with t.
func rawPeer(t *testing.T, nw transport.Network, answer func(c transport.Conn, hello []byte)) string {
	t.Helper()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		conns []transport.Conn
	)
	wg.Go(func() {
		for {
			c, h, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			conns = append(conns, c)
			answer(c, h)
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr()
}

// TestAnswers: every way a peer can answer a dial other than a welcome
// fails the conn with an error that says what happened, in time.
func TestAnswers(t *testing.T) {
	const timeout = 200 * time.Millisecond
	answerWith := func(h transport.Header) func(transport.Conn, []byte) {
		return func(c transport.Conn, _ []byte) {
			c.Send(transport.Frame{Header: h})
			c.Close()
		}
	}
	for _, tc := range []struct {
		name    string
		self    int // the peer is the other of two
		answer  func(transport.Conn, []byte)
		says    string
		wraps   []error
		atLeast time.Duration
	}{
		{"silence", 0, func(transport.Conn, []byte) {}, "did not answer", nil, timeout},
		{"hang up", 0, func(c transport.Conn, _ []byte) { c.Close() }, "hung up", []error{transport.ErrRefused}, 0},
		{"gone", 0, answerWith(transport.Header{Comm: groupID, Kind: lazy.KindWelcome, Tag: 1}), "ended", []error{transport.ErrRefused}, 0},
		{"crossed, never dials", 1, answerWith(transport.Header{Comm: groupID, Kind: lazy.KindWelcome, Tag: 2}), "did not connect", []error{transport.ErrRefused}, timeout},
		{"crossed from the higher index", 0, answerWith(transport.Header{Comm: groupID, Kind: lazy.KindWelcome, Tag: 2}), "not a welcome", []error{lazy.ErrProtocol}, 0},
		{"welcome of another group", 0, answerWith(transport.Header{Comm: groupID + 1, Kind: lazy.KindWelcome}), "not a welcome", []error{lazy.ErrProtocol}, 0},
		{"data", 0, answerWith(header(1, 0, 0, 0)), "not a welcome", []error{lazy.ErrProtocol}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			nw := transport.NewInproc()
			peer := 1 - tc.self
			addrs := make([]string, 2)
			addrs[peer] = rawPeer(t, nw, tc.answer)
			// Answers that fail at once get a dial timeout long enough
			// to tell them from a wait however loaded the machine.
			dialTimeout := timeout
			if tc.atLeast == 0 {
				dialTimeout = waitTimeout
			}
			g := member(t, nw, tc.self, addrs, dialTimeout)
			c, _ := g.Conn(peer)
			r := transporttest.NewRecorder()
			c.Start(r)
			var lent lender
			start := time.Now()
			c.Send(lent.frame(tc.self, peer, 0))
			_, err := r.WaitError(t)
			elapsed := time.Since(start)
			checkEnd(t, err, string(rune('0'+peer)), addrs[peer], tc.wraps...)
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			if elapsed < tc.atLeast {
				t.Errorf("failed after %v, before the dial timeout of %v", elapsed, tc.atLeast)
			}
			if tc.atLeast == 0 && elapsed > dialTimeout/2 {
				t.Errorf("failed after %v: it should not wait for the dial timeout", elapsed)
			}
			if n := lent.returned.Load(); n != 1 {
				t.Errorf("Sent called %d times for 1 lent frame", n)
			}
			r.Check(t)
		})
	}
}

// TestBadHellos: the group closes connections whose hello is not one of
// its members', without an answer, and goes on serving: a good dial
// afterwards is welcomed and carries frames both ways.
func TestBadHellos(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		nw := newNetwork()
		addrs := []string{"", "unused:1", "unused:2"}
		g := member(t, nw, 0, addrs, 0)
		for _, tc := range []struct {
			name  string
			hello []byte
		}{
			{"empty", nil},
			{"short", hello(groupID, 1)[:15]},
			{"other group", hello(groupID+1, 1)},
			{"own index", hello(groupID, 0)},
			{"out of range", hello(groupID, 3)},
			{"far out of range", hello(groupID, 1<<31)},
		} {
			u, err := nw.Dial(t.Context(), addrs[0], tc.hello)
			if err != nil {
				t.Fatalf("%s: Dial: %v", tc.name, err)
			}
			r := transporttest.NewRecorder()
			u.Start(r)
			if got, _ := r.WaitError(t); len(got) != 0 {
				t.Errorf("%s: answered with %+v", tc.name, got[0].Header)
			}
			u.Close()
		}

		u, err := nw.Dial(t.Context(), addrs[0], hello(groupID, 2))
		if err != nil {
			t.Fatalf("good dial: %v", err)
		}
		defer u.Close()
		ru := transporttest.NewRecorder()
		u.Start(ru)
		welcome := ru.WaitFrames(t, 1)[0]
		if want := (transport.Header{Comm: groupID, Kind: lazy.KindWelcome, Seq: 1}); welcome.Header != want || len(welcome.Payload) != 0 {
			t.Fatalf("first frame %+v with %d bytes, want the welcome %+v", welcome.Header, len(welcome.Payload), want)
		}
		if !g.Up(2) {
			t.Error("not Up after welcoming")
		}
		c, _ := g.Conn(2)
		rc := transporttest.NewRecorder()
		c.Start(rc)
		u.Send(frame(2, 0, 0, 0))
		checkFrames(t, rc.WaitFrames(t, 1), 2, 0, map[int]int{0: 1})
		c.Send(frame(0, 2, 0, 0))
		checkFrames(t, ru.WaitFrames(t, 2)[1:], 0, 2, map[int]int{0: 1})
		rc.Check(t)
	})
}

// TestConnFails: once up, the end of the connection fails the conn: its
// handler gets the frames sent before, then one error, and Sends fail;
// it does not reconnect.
func TestConnFails(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		const n = 50
		nw := newProbe(newNetwork())
		c := newCluster(t, nw, 2, clusterOptions{})
		c.conns[0][1].Send(frame(0, 1, 0, 0))
		c.recs[1][0].WaitFrames(t, 1)
		for i := range n {
			c.conns[1][0].Send(frame(1, 0, 0, i))
		}
		c.conns[1][0].Close()
		got, err := c.recs[0][1].WaitError(t)
		checkFrames(t, got, 1, 0, map[int]int{0: n})
		checkEnd(t, err, "1", c.addrs[1])
		if err := c.conns[0][1].Send(frame(0, 1, 0, 1)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send after the failure: %v, want ErrClosed", err)
		}
		if c.groups[0].Up(1) || c.groups[1].Up(0) {
			t.Error("Up after the end")
		}
		if d := nw.dials.Load(); d != 1 {
			t.Errorf("%d dials, want 1: no reconnecting", d)
		}
		c.check()
	})
}

// TestFailureAfterFrames: frames the peer sent before it closed reach the
// handler before the error, even when the flush of our own queue, which
// starts on reading the welcome, is what finds the connection closed.
func TestFailureAfterFrames(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		const n = 10
		nw := newProbe(newNetwork())
		nw.holdStart = make(chan struct{})
		c := newCluster(t, nw, 2, clusterOptions{})
		c.conns[1][0].Send(frame(1, 0, 0, 0))
		eventually(t, "member 0 to accept", func() bool { return c.groups[0].Up(1) })
		for i := range n {
			c.conns[0][1].Send(frame(0, 1, 0, i))
		}
		c.conns[0][1].Close()
		close(nw.holdStart)
		got, err := c.recs[1][0].WaitError(t)
		checkFrames(t, got, 0, 1, map[int]int{0: n})
		if !errors.Is(err, transport.ErrClosed) {
			t.Errorf("error %v does not wrap ErrClosed", err)
		}
		c.check()
	})
}
