package lazy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/lazy"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// waitTimeout bounds every wait; it only matters when something is lost.
const waitTimeout = 10 * time.Second

// groupID is the id of the groups the tests build.
const groupID = 0x5eed_1a2e_c0ffee

// tb is what the helpers need of a test: *testing.T and *rapid.T have it.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// networks are the transports every test that takes one runs over.
var networks = []struct {
	name string
	new  func() transport.Network
}{
	{"inproc", func() transport.Network { return transport.NewInproc() }},
	{"tcp", func() transport.Network { return tcp.New(tcp.WithListenHost("127.0.0.1")) }},
}

// forEachNetwork runs test once per network, as subtests.
func forEachNetwork(t *testing.T, test func(t *testing.T, newNetwork func() transport.Network)) {
	for _, nw := range networks {
		t.Run(nw.name, func(t *testing.T) { test(t, nw.new) })
	}
}

// frame is frame seq of stream (from, to, lane): the header names the
// stream and the payload repeats it, so that a frame delivered to the
// wrong conn, twice or out of order shows.
func frame(from, to, lane, seq int) transport.Frame {
	p := transport.GetBuffer(24)
	binary.LittleEndian.PutUint64(p, uint64(from))
	binary.LittleEndian.PutUint64(p[8:], uint64(to))
	binary.LittleEndian.PutUint64(p[16:], uint64(seq))
	return transport.Frame{Header: header(from, to, lane, seq), Payload: p}
}

func header(from, to, lane, seq int) transport.Header {
	return transport.Header{
		Comm: uint64(from)<<32 | uint64(to),
		Kind: transport.PointToPoint,
		Seq:  uint64(seq),
		Tag:  uint32(lane),
		Sig:  uint64(seq) * 0x9E3779B97F4A7C15,
	}
}

// checkFrames checks that got, received by to from from, holds for each
// lane exactly the frames 0..want[lane]-1 in order, and nothing else.
func checkFrames(t tb, got []transport.Frame, from, to int, want map[int]int) {
	t.Helper()
	next := make(map[int]int)
	for _, f := range got {
		lane := int(f.Header.Tag)
		seq := next[lane]
		w := frame(from, to, lane, seq)
		if f.Header != w.Header || !bytes.Equal(f.Payload, w.Payload) {
			t.Fatalf("member %d, from %d, lane %d: frame %d is %+v, want %+v", to, from, lane, seq, f.Header, w.Header)
		}
		transport.PutBuffer(w.Payload)
		next[lane]++
	}
	for lane, n := range want {
		if next[lane] != n {
			t.Errorf("member %d, from %d, lane %d: got %d frames, want %d", to, from, lane, next[lane], n)
		}
	}
	for lane, n := range next {
		if _, ok := want[lane]; !ok {
			t.Errorf("member %d, from %d: %d frames on lane %d, which sent none", to, from, n, lane)
		}
	}
}

// probe is a Network that records what goes over it: dials, accepted
// connections, and per connection, by its addresses, the data frames
// its ends sent and the answers its acceptor gave. gate, if set, is
// called at the start of every Dial and may block it.
type probe struct {
	inner transport.Network
	gate  func(addr string)
	// holdStart, if set, holds Start of every dialled connection until
	// it is closed.
	holdStart chan struct{}

	dials    atomic.Int32
	accepted atomic.Int32

	mu    sync.Mutex
	wires map[[2]string]*wire // by dialer's local address and listener address
	live  []transport.Conn    // every inner connection, to reset
}

// reset closes every inner connection made so far, as a network fault
// would: both ends' groups see their connection fail.
func (p *probe) reset() {
	p.mu.Lock()
	live := p.live
	p.live = nil
	p.mu.Unlock()
	for _, c := range live {
		c.Close()
	}
}

func (p *probe) track(c transport.Conn) {
	p.mu.Lock()
	p.live = append(p.live, c)
	p.mu.Unlock()
}

// wire is one connection of the inner network.
type wire struct {
	listener string // the address dialled
	dialer   int    // the dialer's index, from the hello
	data     atomic.Int32
	welcomed atomic.Bool
	answers  atomic.Uint32 // bit 1<<Tag for each answer the acceptor sent
}

func newProbe(inner transport.Network) *probe {
	return &probe{inner: inner, wires: make(map[[2]string]*wire)}
}

func (p *probe) wire(dialer, listener string, hello []byte) *wire {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.wires[[2]string{dialer, listener}]
	if w == nil {
		w = &wire{listener: listener, dialer: -1}
		if len(hello) >= 16 {
			w.dialer = int(binary.LittleEndian.Uint32(hello[8:]))
		}
		p.wires[[2]string{dialer, listener}] = w
	}
	return w
}

// between counts the connections between members i and j of c that
// carried data frames, and those that were welcomed.
func (p *probe) between(c *cluster, i, j int) (carrying, welcomed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.wires {
		if !(w.listener == c.addrs[i] && w.dialer == j || w.listener == c.addrs[j] && w.dialer == i) {
			continue
		}
		if w.data.Load() > 0 {
			carrying++
		}
		if w.welcomed.Load() {
			welcomed++
		}
	}
	return carrying, welcomed
}

func (p *probe) Listen(addr string) (transport.Listener, error) {
	l, err := p.inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &probeListener{Listener: l, p: p}, nil
}

func (p *probe) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	p.dials.Add(1)
	if p.gate != nil {
		p.gate(addr)
	}
	c, err := p.inner.Dial(ctx, addr, hello)
	if err != nil {
		return nil, err
	}
	p.track(c)
	return &probeConn{Conn: c, w: p.wire(c.LocalAddr(), addr, hello), hold: p.holdStart}, nil
}

// dialed returns the connection member from dialled to the listener at
// addr, once there is one.
func (p *probe) dialed(t tb, from int, addr string) *wire {
	t.Helper()
	var found *wire
	eventually(t, fmt.Sprintf("a connection from %d to %s", from, addr), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, w := range p.wires {
			if w.dialer == from && w.listener == addr {
				found = w
				return true
			}
		}
		return false
	})
	return found
}

// borrowingProbe is a probe that says its connections borrow payloads, as
// a Network over borrowing connections does.
type borrowingProbe struct{ *probe }

func (borrowingProbe) BorrowsPayloads() {}

type probeListener struct {
	transport.Listener
	p *probe
}

func (l *probeListener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	c, hello, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, nil, err
	}
	l.p.accepted.Add(1)
	l.p.track(c)
	return &probeConn{Conn: c, w: l.p.wire(c.RemoteAddr(), l.Addr(), hello)}, hello, nil
}

type probeConn struct {
	transport.Conn
	w    *wire
	hold chan struct{}
}

func (c *probeConn) Start(h transport.Handler) {
	if c.hold != nil {
		<-c.hold
	}
	c.Conn.Start(h)
}

func (c *probeConn) Send(f transport.Frame) error {
	switch {
	case f.Header.Kind != lazy.KindWelcome:
		c.w.data.Add(1)
	case f.Header.Tag == 0:
		c.w.welcomed.Store(true)
		fallthrough
	default:
		c.w.answers.Or(1 << f.Header.Tag)
	}
	return c.Conn.Send(f)
}

// Drained passes the inner connection's on; inproc connections have
// nothing left to drain once closed.
func (c *probeConn) Drained() <-chan struct{} {
	if d, ok := c.Conn.(transport.Drainer); ok {
		return d.Drained()
	}
	done := make(chan struct{})
	close(done)
	return done
}

// cluster is n members of one group over one network, each with a started
// handler for every peer.
type cluster struct {
	t        tb
	nw       transport.Network
	groups   []*lazy.Group
	addrs    []string
	conns    [][]transport.Conn          // conns[i][j]: member i's conn to j
	recs     [][]*transporttest.Recorder // recs[i][j]: its handler
	connects [][]atomic.Int32            // connects[i][j]: OnConnect(j) calls at i
	resolves [][]atomic.Int32            // resolves[i][j]: Resolve(j) calls at i
}

type clusterOptions struct {
	dialTimeout time.Duration
}

// newCluster starts n members over nw, closed after t.
func newCluster(t tb, nw transport.Network, n int, opts clusterOptions) *cluster {
	t.Helper()
	c := &cluster{t: t, nw: nw, groups: make([]*lazy.Group, n), addrs: make([]string, n)}
	listeners := make([]transport.Listener, n)
	for i := range n {
		l, err := nw.Listen("")
		if err != nil {
			for _, l := range listeners[:i] {
				l.Close()
			}
			t.Fatalf("Listen: %v", err)
		}
		listeners[i], c.addrs[i] = l, l.Addr()
	}
	c.connects = make([][]atomic.Int32, n)
	c.resolves = make([][]atomic.Int32, n)
	c.conns = make([][]transport.Conn, n)
	c.recs = make([][]*transporttest.Recorder, n)
	for i := range n {
		c.connects[i] = make([]atomic.Int32, n)
		c.resolves[i] = make([]atomic.Int32, n)
		g, err := lazy.New(lazy.Config{
			Network:  nw,
			Listener: listeners[i],
			ID:       groupID,
			Self:     i,
			Members:  len(c.addrs),
			Resolve: func(ctx context.Context, peer int) (string, error) {
				c.resolves[i][peer].Add(1)
				return fixed(c.addrs)(ctx, peer)
			},
			DialTimeout: opts.dialTimeout,
			OnConnect:   func(peer int) { c.connects[i][peer].Add(1) },
		})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		c.groups[i] = g
		t.Cleanup(func() { g.Close() })
		c.conns[i] = make([]transport.Conn, n)
		c.recs[i] = make([]*transporttest.Recorder, n)
		for j := range n {
			if j == i {
				continue
			}
			conn, err := g.Conn(j)
			if err != nil {
				t.Fatalf("member %d: Conn(%d): %v", i, j, err)
			}
			c.conns[i][j], c.recs[i][j] = conn, transporttest.NewRecorder()
			conn.Start(c.recs[i][j])
		}
	}
	return c
}

// check reports contract violations seen by any handler.
func (c *cluster) check() {
	c.t.Helper()
	for _, rs := range c.recs {
		for _, r := range rs {
			if r != nil {
				r.Check(c.t)
			}
		}
	}
}

func (c *cluster) closeAll() {
	for _, g := range c.groups {
		g.Close()
	}
}

// gate blocks the dials it is set to hold until released.
type gate struct {
	mu      sync.Mutex
	held    map[string]chan struct{} // by dialled address
	arrived map[string]bool
}

func newGate() *gate {
	return &gate{held: make(map[string]chan struct{}), arrived: make(map[string]bool)}
}

// hold makes dials to addr wait for release.
func (g *gate) hold(addr string) {
	g.mu.Lock()
	g.held[addr] = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) release(addr string) {
	g.mu.Lock()
	close(g.held[addr])
	g.mu.Unlock()
}

// wait is the probe's gate.
func (g *gate) wait(addr string) {
	g.mu.Lock()
	ch := g.held[addr]
	if ch != nil {
		g.arrived[addr] = true
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// waitArrived waits until a dial to addr is held.
func (g *gate) waitArrived(t tb, addr string) {
	t.Helper()
	eventually(t, "a dial to "+addr, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.arrived[addr]
	})
}

// eventually waits for cond, polling.
func eventually(t tb, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// fixed resolves peers to addrs, which the caller may fill in until the
// first dial.
func fixed(addrs []string) func(context.Context, int) (string, error) {
	return func(_ context.Context, peer int) (string, error) { return addrs[peer], nil }
}
