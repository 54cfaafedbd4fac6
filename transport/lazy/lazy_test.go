package lazy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/internal/leaktest"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/lazy"
)

// TestTwoMembers: the first Send dials; frames arrive in order; the peer
// answers on the same connection; OnConnect fires once on each side; the
// addresses are the listener's before and the connection's after; one
// connection is made.
func TestTwoMembers(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		const n = 100
		nw := newProbe(newNetwork())
		c := newCluster(t, nw, 2, clusterOptions{})
		a, b := c.conns[0][1], c.conns[1][0]

		if got, want := a.LocalAddr(), c.addrs[0]; got != want {
			t.Errorf("LocalAddr before connecting = %q, want the listener's %q", got, want)
		}
		if got := a.RemoteAddr(); got != "" {
			t.Errorf("RemoteAddr before resolving = %q, want none", got)
		}
		if c.groups[0].Up(1) || c.groups[1].Up(0) {
			t.Error("Up before any Send")
		}
		if d := nw.dials.Load(); d != 0 {
			t.Errorf("%d dials before any Send", d)
		}

		for i := range n {
			if err := a.Send(frame(0, 1, 0, i)); err != nil {
				t.Fatalf("Send %d: %v", i, err)
			}
		}
		checkFrames(t, c.recs[1][0].WaitFrames(t, n), 0, 1, map[int]int{0: n})
		for i := range n {
			if err := b.Send(frame(1, 0, 0, i)); err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
		}
		checkFrames(t, c.recs[0][1].WaitFrames(t, n), 1, 0, map[int]int{0: n})

		if !c.groups[0].Up(1) || !c.groups[1].Up(0) {
			t.Error("not Up after the exchange")
		}
		for i, j := range []int{1, 0} {
			if got := c.connects[i][j].Load(); got != 1 {
				t.Errorf("member %d: OnConnect(%d) called %d times, want 1", i, j, got)
			}
		}
		if d, acc := nw.dials.Load(), nw.accepted.Load(); d != 1 || acc != 1 {
			t.Errorf("%d dials and %d accepted connections, want 1 and 1", d, acc)
		}
		if carrying, welcomed := nw.between(c, 0, 1); carrying != 1 || welcomed != 1 {
			t.Errorf("%d connections carried data and %d were welcomed, want 1 and 1", carrying, welcomed)
		}
		if a.LocalAddr() != b.RemoteAddr() || a.RemoteAddr() != b.LocalAddr() {
			t.Errorf("addresses once connected: %s->%s and %s->%s do not mirror each other",
				a.LocalAddr(), a.RemoteAddr(), b.LocalAddr(), b.RemoteAddr())
		}
		c.check()
	})
}

// TestPingPong: handlers that answer from inside HandleFrame, on both
// sides, run to the end without deadlock; over inproc that delivers in
// the sender's goroutine, through both members' locks.
func TestPingPong(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, newNetwork func() transport.Network) {
		leaktest.Check(t)
		const rounds = 200
		c := newCluster(t, newNetwork(), 2, clusterOptions{})
		for i, j := range []int{1, 0} {
			conn := c.conns[i][j]
			c.recs[i][j].Reply = func(f transport.Frame) error {
				if next := int(f.Header.Seq) + 1; next < rounds {
					return conn.Send(frame(i, j, 0, next))
				}
				return nil
			}
		}
		// Member 1 answers with the odd frames of its lane, member 0 with
		// the even ones; each side checks what the other sent.
		if err := c.conns[0][1].Send(frame(0, 1, 0, 0)); err != nil {
			t.Fatal(err)
		}
		got1 := c.recs[1][0].WaitFrames(t, rounds/2)
		got0 := c.recs[0][1].WaitFrames(t, rounds/2)
		for k, f := range got1 {
			if want := uint64(2 * k); f.Header.Seq != want || f.Header.Comm != 0<<32|1 {
				t.Fatalf("member 1 got seq %d comm %#x as frame %d, want seq %d", f.Header.Seq, f.Header.Comm, k, want)
			}
		}
		for k, f := range got0 {
			if want := uint64(2*k + 1); f.Header.Seq != want || f.Header.Comm != 1<<32|0 {
				t.Fatalf("member 0 got seq %d comm %#x as frame %d, want seq %d", f.Header.Seq, f.Header.Comm, k, want)
			}
		}
		c.check()
	})
}

// TestConfig: New refuses a configuration it cannot run, and Conn an index
// that names no peer; Conn returns the same conn every time.
func TestConfig(t *testing.T) {
	nw := transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	good := lazy.Config{Network: nw, Listener: l, ID: groupID, Self: 1, Members: 3, Resolve: fixed([]string{"inproc/a", l.Addr(), "inproc/c"})}
	for _, tc := range []struct {
		name string
		edit func(*lazy.Config)
	}{
		{"no network", func(c *lazy.Config) { c.Network = nil }},
		{"no listener", func(c *lazy.Config) { c.Listener = nil }},
		{"no members", func(c *lazy.Config) { c.Members = 0; c.Self = 0 }},
		{"self negative", func(c *lazy.Config) { c.Self = -1 }},
		{"self out of range", func(c *lazy.Config) { c.Self = 3 }},
		{"no resolver", func(c *lazy.Config) { c.Resolve = nil }},
		{"negative timeout", func(c *lazy.Config) { c.DialTimeout = -1 }},
	} {
		cfg := good
		tc.edit(&cfg)
		if g, err := lazy.New(cfg); err == nil {
			g.Close()
			t.Errorf("%s: New succeeded", tc.name)
		}
	}

	leaktest.Check(t)
	g, err := lazy.New(good)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer g.Close()
	for _, peer := range []int{-1, 1, 3} {
		if c, err := g.Conn(peer); !errors.Is(err, lazy.ErrPeer) || c != nil {
			t.Errorf("Conn(%d) = %v, %v; want nil, ErrPeer", peer, c, err)
		} else if !strings.Contains(err.Error(), "member 1") {
			t.Errorf("Conn(%d) error %q does not name this member", peer, err)
		}
		if g.Up(peer) {
			t.Errorf("Up(%d) = true", peer)
		}
	}
	c1, err := g.Conn(2)
	if err != nil {
		t.Fatalf("Conn(2): %v", err)
	}
	if c2, _ := g.Conn(2); c2 != c1 {
		t.Error("Conn(2) returned a different conn the second time")
	}
	if _, ok := c1.(transport.Drainer); !ok {
		t.Error("conn is no transport.Drainer")
	}
	g.Close()
	if _, err := g.Conn(0); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Conn after Close: %v, want ErrClosed", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestBorrower: a conn is a transport.Borrower exactly when its Network
// says its connections are.
func TestBorrower(t *testing.T) {
	for _, nw := range networks {
		for _, borrowing := range []bool{false, true} {
			var network transport.Network = newProbe(nw.new())
			if borrowing {
				network = borrowingProbe{network.(*probe)}
			}
			name := nw.name
			if borrowing {
				name += " saying it borrows"
			}
			t.Run(name, func(t *testing.T) {
				leaktest.Check(t)
				c := newCluster(t, network, 2, clusterOptions{})
				_, got := c.conns[0][1].(transport.Borrower)
				if got != borrowing {
					t.Errorf("conn over a Network that borrows (%v) is a Borrower: %v", borrowing, got)
				}
				// Its Drainer survives the wrapping.
				if _, ok := c.conns[0][1].(transport.Drainer); !ok {
					t.Error("conn is no transport.Drainer")
				}
			})
		}
	}
	// tcp's own Network is a Borrower, or will be: the conns follow it.
	nw := networks[1].new()
	_, want := nw.(transport.Borrower)
	c := newCluster(t, nw, 2, clusterOptions{})
	if _, got := c.conns[1][0].(transport.Borrower); got != want {
		t.Errorf("conn over tcp is a Borrower: %v; the Network is one: %v", got, want)
	}
}
