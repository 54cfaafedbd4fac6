package lazy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// DefaultDialTimeout applies when Config.DialTimeout is zero.
const DefaultDialTimeout = 30 * time.Second

// helloLen is the size of a hello's fixed part: the group id, the
// dialer's index, then the generation of the dialer's Conn to us. The
// dialer's listener address follows.
const helloLen = 16

// Config describes one member of a group.
type Config struct {
	// Network dials the peers. A Network that implements
	// transport.Borrower promises that its connections do, and makes the
	// Group's Conns borrowers too.
	Network transport.Network
	// Listener is this member's, already listening at the address that
	// Resolve gives for Self to the other members. New
	// takes it over, and Close closes it; if New fails, it stays the
	// caller's.
	Listener transport.Listener
	// ID is the group's id. It is in every hello and answer, and a hello
	// carrying another id is refused, so that two groups sharing addresses
	// never connect to each other.
	ID uint64
	// Members is the group's size, and Self this member's index in it.
	Members int
	Self    int
	// Resolve returns a peer's listener address. It is called once per
	// peer, when this member first dials it, so that a member learns only
	// the addresses of the peers it talks to: with a rendezvous store
	// behind it, what the store serves grows with the connections made,
	// not with the square of the group's size. A peer's hello carries its
	// address too, and a Conn that reconnects dials the address already
	// known, so the store need not outlive the rendezvous.
	Resolve func(ctx context.Context, peer int) (string, error)
	// DialTimeout bounds a dial with the wait for the peer's answer, and
	// separately the wait for the peer's own connection after it refused
	// ours. Zero means 30 s.
	DialTimeout time.Duration
	// OnConnect, if set, is called with a peer's index when a connection
	// to it comes up, whichever side dialled it: once per Conn at most. It
	// is called from any goroutine and never under a lock, and must not
	// block.
	OnConnect func(peer int)
}

// Group is one member's side of a group whose members connect on first
// use. Create it with New. Its methods are safe for concurrent use.
type Group struct {
	net       transport.Network
	ln        transport.Listener
	id        uint64
	self      int
	members   int
	resolve   func(ctx context.Context, peer int) (string, error)
	timeout   time.Duration
	onConnect func(peer int)
	borrows   bool // the Network's connections are transport.Borrowers

	ctx      context.Context // ends the accept goroutine's wait
	cancel   context.CancelFunc
	stopOnce sync.Once
	stopErr  error // the listener's Close error

	// mu guards the fields below. It may be taken with a Conn's lock held,
	// never the other way round.
	mu       sync.Mutex
	conns    []*conn  // by peer index, created on first use, made anew after a failure
	gens     []uint32 // by peer index: the generation of the latest conn
	addrs    []string // by peer index: the address resolved, once it is
	closed   bool     // Close has begun
	shutting bool     // Close has closed every Conn: the listener goes once pending is 0
	pending  int      // closed Conns whose frames await a connection
}

// New starts the member described by cfg: it validates cfg and starts one
// goroutine, which accepts the connections peers dial. Nothing is dialled
// until a Conn's first Send.
func New(cfg Config) (*Group, error) {
	switch {
	case cfg.Network == nil:
		return nil, errors.New("transport/lazy: no Network")
	case cfg.Listener == nil:
		return nil, errors.New("transport/lazy: no Listener")
	case cfg.Resolve == nil:
		return nil, errors.New("transport/lazy: no Resolve")
	case cfg.Members <= 0:
		return nil, fmt.Errorf("transport/lazy: %d members", cfg.Members)
	case uint64(cfg.Members) > math.MaxUint32:
		return nil, fmt.Errorf("transport/lazy: %d members; a hello has room for %d", cfg.Members, uint64(math.MaxUint32))
	case cfg.Self < 0 || cfg.Self >= cfg.Members:
		return nil, fmt.Errorf("transport/lazy: member index %d out of range for %d members", cfg.Self, cfg.Members)
	case cfg.DialTimeout < 0:
		return nil, fmt.Errorf("transport/lazy: negative dial timeout %v", cfg.DialTimeout)
	}
	g := &Group{
		net:       cfg.Network,
		ln:        cfg.Listener,
		id:        cfg.ID,
		self:      cfg.Self,
		members:   cfg.Members,
		resolve:   cfg.Resolve,
		timeout:   cfg.DialTimeout,
		onConnect: cfg.OnConnect,
		conns:     make([]*conn, cfg.Members),
		gens:      make([]uint32, cfg.Members),
		addrs:     make([]string, cfg.Members),
	}
	if g.timeout == 0 {
		g.timeout = DefaultDialTimeout
	}
	_, g.borrows = cfg.Network.(transport.Borrower)
	g.ctx, g.cancel = context.WithCancel(context.Background())
	go g.serve()
	return g, nil
}

// Conn returns the connection to peer: the same value for every call with
// the same peer, until it fails; then a new one, which dials on its first
// Send unless the peer dials first. A Conn is created on the first call,
// and dials on its first Send. Conn fails with ErrPeer when peer is out of
// range or this member's own index, and with an error wrapping
// transport.ErrClosed after Close.
func (g *Group) Conn(peer int) (transport.Conn, error) {
	c, err := g.member(peer)
	if err != nil {
		return nil, err
	}
	return g.wrap(c), nil
}

// Dial is Conn, dialling now if the connection is not up, rather than on
// the first Send. A member dials the peers it expects frames from, so
// that one that left before sending is found when the dial fails, not
// when a timeout runs out.
func (g *Group) Dial(peer int) (transport.Conn, error) {
	c, err := g.member(peer)
	if err != nil {
		return nil, err
	}
	c.connect()
	return g.wrap(c), nil
}

// member is the conn to peer, made on first use.
func (g *Group) member(peer int) (*conn, error) {
	if peer < 0 || peer >= g.members || peer == g.self {
		return nil, fmt.Errorf("transport/lazy: conn to member %d of %d from member %d: %w", peer, g.members, g.self, ErrPeer)
	}
	c := g.lookup(peer)
	if c == nil {
		return nil, fmt.Errorf("transport/lazy: conn to peer %d: group closed: %w", peer, transport.ErrClosed)
	}
	return c, nil
}

func (g *Group) wrap(c *conn) transport.Conn {
	if g.borrows {
		return borrowingConn{c}
	}
	return c
}

// Up reports whether the connection to peer is established and not closed
// or failed. It is false for an index Conn would refuse.
func (g *Group) Up(peer int) bool {
	if peer < 0 || peer >= g.members {
		return false
	}
	g.mu.Lock()
	c := g.conns[peer]
	g.mu.Unlock()
	return c != nil && c.Established()
}

// Close closes every Conn, as their Close does, and the listener. A Conn
// whose frames still wait for their connection keeps them going, within
// the dial timeout, and so does the listener: the peer's own connection
// may be the one that carries them. Until then it refuses every other
// connection, and Close returns without waiting; the Conns' Drained say
// when their frames have left. Close returns the listener's Close error
// when it closes the listener itself.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	var conns []*conn
	for _, c := range g.conns {
		if c != nil {
			conns = append(conns, c)
		}
	}
	g.mu.Unlock()

	for _, c := range conns {
		c.Close()
	}
	g.mu.Lock()
	g.shutting = true
	idle := g.pending == 0
	g.mu.Unlock()
	if idle {
		return g.stopAccepting()
	}
	return nil
}

// lookup returns the conn to peer, creating it, or making it anew if it
// failed; nil after Close.
func (g *Group) lookup(peer int) *conn {
	g.mu.Lock()
	c := g.conns[peer]
	if g.closed {
		c = nil
	} else if c == nil {
		c = g.newConnLocked(peer)
	}
	g.mu.Unlock()
	if c != nil && c.hasFailed() {
		return g.replace(c)
	}
	return c
}

// replace makes a new conn to old's peer in place of old, which failed,
// unless that happened already; nil after Close.
func (g *Group) replace(old *conn) *conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch c := g.conns[old.peer]; {
	case g.closed:
		return nil
	case c != old:
		return c
	}
	return g.newConnLocked(old.peer)
}

// newConnLocked makes the next generation of conn to peer. Called with
// g.mu held.
func (g *Group) newConnLocked(peer int) *conn {
	g.gens[peer]++
	c := newConn(g, peer, g.gens[peer])
	g.conns[peer] = c
	return c
}

// knownAddress is peer's listener address, or "" while unknown. It may
// be called with a conn's lock held.
func (g *Group) knownAddress(peer int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.addrs[peer]
}

// address returns peer's listener address, resolving it on first use.
func (g *Group) address(ctx context.Context, peer int) (string, error) {
	if addr := g.knownAddress(peer); addr != "" {
		return addr, nil
	}
	addr, err := g.resolve(ctx, peer)
	if err != nil {
		return "", err
	}
	g.learn(peer, addr)
	return addr, nil
}

// learn records peer's listener address.
func (g *Group) learn(peer int, addr string) {
	g.mu.Lock()
	if g.addrs[peer] == "" {
		g.addrs[peer] = addr
	}
	g.mu.Unlock()
}

// hello is what a dial of our conn of generation gen says.
func (g *Group) hello(gen uint32) []byte {
	h := binary.LittleEndian.AppendUint64(make([]byte, 0, helloLen), g.id)
	h = binary.LittleEndian.AppendUint32(h, uint32(g.self))
	h = binary.LittleEndian.AppendUint32(h, gen)
	return append(h, g.ln.Addr()...)
}

// pend counts a closed conn whose frames await a connection.
func (g *Group) pend() {
	g.mu.Lock()
	g.pending++
	g.mu.Unlock()
}

// settled uncounts one; the last after Close closes the listener.
func (g *Group) settled() {
	g.mu.Lock()
	g.pending--
	last := g.shutting && g.pending == 0
	g.mu.Unlock()
	if last {
		g.stopAccepting()
	}
}

func (g *Group) stopAccepting() error {
	g.stopOnce.Do(func() {
		g.cancel()
		g.stopErr = g.ln.Close()
	})
	return g.stopErr
}

// serve is the accept goroutine. It ends when the listener does: a
// listener that fails Accept for any reason is of no further use.
func (g *Group) serve() {
	for {
		u, hello, err := g.ln.Accept(g.ctx)
		if err != nil {
			return
		}
		g.admit(u, hello)
	}
}

// admit hands a connection whose hello is good to its peer's conn, and
// closes any other.
func (g *Group) admit(u transport.Conn, hello []byte) {
	peer, gen, addr, ok := g.parseHello(hello)
	if !ok {
		u.Close()
		return
	}
	if addr != "" {
		g.learn(peer, addr)
	}
	g.admitDial(u, peer, gen)
}

// admitDial hands u, dialled by the peer's Conn of generation gen, to our
// conn to peer. A dial from a newer generation than the one ours is
// connected to says the peer lost that connection: once ours has failed,
// a new conn takes the dial; until then it waits (conn.superseded).
func (g *Group) admitDial(u transport.Conn, peer int, gen uint32) {
	// After Close, the conns that exist may still await this very
	// connection; there is nothing to create for any other peer.
	g.mu.Lock()
	c := g.conns[peer]
	if c == nil && !g.closed {
		c = g.newConnLocked(peer)
	}
	g.mu.Unlock()
	if c != nil {
		replace, held := c.superseded(u, gen)
		if held {
			return
		}
		if replace {
			c = g.replace(c)
		}
	}
	if c == nil {
		g.refuse(u, tagGone)
		return
	}
	c.incoming(u, gen)
}

// parseHello returns the dialer's index, the generation of its Conn and
// its listener address from a hello of this group.
func (g *Group) parseHello(hello []byte) (peer int, gen uint32, addr string, ok bool) {
	if len(hello) < helloLen || binary.LittleEndian.Uint64(hello) != g.id {
		return 0, 0, "", false
	}
	p := binary.LittleEndian.Uint32(hello[8:])
	if uint64(p) >= uint64(g.members) || int(p) == g.self {
		return 0, 0, "", false
	}
	return int(p), binary.LittleEndian.Uint32(hello[12:]), string(hello[helloLen:]), true
}

// refuse answers a dial with a refusal, tagGone or tagCrossed, and closes
// it. The answer tells the dialer whether to wait for our own dial.
func (g *Group) refuse(u transport.Conn, tag uint32) {
	_ = u.Send(transport.Frame{Header: g.answer(tag, 0)}) // failing, it ends the dial all the same
	u.Close()
}

// answer is the header of the first frame on an accepted connection; a
// welcome carries the generation of the conn that took it.
func (g *Group) answer(tag, gen uint32) transport.Header {
	return transport.Header{Comm: g.id, Kind: KindWelcome, Tag: tag, Seq: uint64(gen)}
}

// isAnswer reports whether h is the answer tag, whatever its generation.
func (g *Group) isAnswer(h transport.Header, tag uint32) bool {
	h.Seq = 0
	return h == g.answer(tag, 0)
}
