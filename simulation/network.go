package simulation

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/lazy"
)

// network carries frames between simulated ranks at the times the
// topology gives, on the loop, and injects the plan's faults. A pair of
// ranks gets a connection for each communicator they share (as
// transport/mux gives real ranks theirs over one socket) when either
// first needs it, as transport/lazy gives real ranks theirs, and a new
// one when it dials again after the last one broke.
type network struct {
	loop    *Loop
	topo    Topology
	faults  Plan
	perNode int
	ports   []ports           // by rank
	pairs   map[pairKey]*conn // the lower rank's end of the newest connection
	byRank  [][]*conn         // each rank's ends, in the order made: maps do not iterate in a fixed order
	crashed []bool
	resets  bool // the faults reset connections that are dialled again
	// forgets drops a pair once both its ends ended: its ranks release
	// links they no longer use, and the network keeps only the open ones.
	forgets   bool
	restarted []bool // a new process, which knows no communicator, answers for the rank
	frames    int64
	bytes     int64
	redials   int64
	// open counts the pairs made and not forgotten, peak the most at once.
	open, peak int64
	comms      []*fabricComm          // the communicators joined, by index
	byName     map[string]*fabricComm // and by name
	onFrame    func(from, to, size int, sent, arrival time.Duration)
	arrivals   []*arrival // rung, for frames to come (conn.Send)
	// talked is every rank that each rank a fault on its links names
	// ever had a connection with (connected): with forgets, pairs keeps
	// only the open ones.
	talked map[int]map[int]bool
}

// ports is when each of a rank's ports is next free, in virtual time.
type ports struct {
	intraSend, intraRecv time.Duration
	nicSend, nicRecv     time.Duration
}

// newNetwork applies faults, and jitter, if positive, as a Jitter fault on
// every link for the whole run.
func newNetwork(l *Loop, topo Topology, ranks int, faults Plan, jitter time.Duration) *network {
	if jitter > 0 {
		faults = append(slices.Clip(faults), Fault{Kind: Jitter, For: math.MaxInt64, By: jitter})
	}
	n := &network{
		loop:      l,
		topo:      topo,
		faults:    faults,
		perNode:   ranks / topo.Nodes,
		ports:     make([]ports, ranks),
		pairs:     map[pairKey]*conn{},
		byRank:    make([][]*conn, ranks),
		crashed:   make([]bool, ranks),
		restarted: make([]bool, ranks),
		byName:    map[string]*fabricComm{},
		resets:    faults.resets(),
	}
	for _, f := range faults {
		if shapes[f.Kind].scope == linkScope && len(f.Ranks) == 1 {
			if n.talked == nil {
				n.talked = map[int]map[int]bool{}
			}
			n.talked[f.Ranks[0]] = map[int]bool{}
		}
	}
	return n
}

// The errors peers see when a fault breaks their connection.
var (
	errCrashed   = errors.New("connection reset: peer crashed")
	errRefused   = fmt.Errorf("peer is down: %w", transport.ErrRefused)
	errUnknown   = fmt.Errorf("the peer's process knows no such communicator: %w", transport.ErrRefused)
	errCut       = errors.New("no route to host: the network is partitioned")
	errDropped   = errors.New("connection reset: the link dropped")
	errChecksum  = errors.New("frame checksum mismatch: payload corrupted")
	errStoreDown = errors.New("store unreachable: cannot read the peer's address")
)

// pairKey names the connections of a pair of ranks, lower rank first,
// for one communicator.
type pairKey struct{ comm, lo, hi int }

// fabricComm is a communicator over the network: its members, by their
// rank there, and who of them has joined.
type fabricComm struct {
	index   int
	members []int       // the run rank of each rank; nil: the same
	rankOf  map[int]int // the inverse of members, if set
	joined  []member    // by rank
}

// member is a rank of a fabricComm: whom to tell of a connection that
// came up, once it has joined, and the connections that came up before.
type member struct {
	connected func(rank int)
	early     []int
}

func (fc *fabricComm) runRank(rank int) int {
	if fc.members == nil {
		return rank
	}
	return fc.members[rank]
}

// Join makes members[me] rank me of communicator name: *network is the
// transport.Fabric of the run's communicators, which need no addresses.
func (n *network) Join(name string, members []int, me int, connected func(rank int)) func(rank int) (transport.Conn, error) {
	fc := n.byName[name]
	if fc == nil {
		size := len(members)
		if members == nil {
			size = len(n.crashed)
		}
		fc = &fabricComm{index: len(n.comms), members: members, joined: make([]member, size)}
		if members != nil {
			fc.rankOf = make(map[int]int, len(members))
			for r, q := range members {
				fc.rankOf[q] = r
			}
		}
		n.comms = append(n.comms, fc)
		n.byName[name] = fc
	}
	m := &fc.joined[me]
	m.connected = connected
	for _, peer := range m.early {
		connected(peer)
	}
	m.early = nil
	from := fc.runRank(me)
	return func(rank int) (transport.Conn, error) { return n.connect(fc.index, from, fc.runRank(rank)) }
}

// connectedTo tells run rank to, of communicator comm, that run rank
// peer's connection came up.
func (n *network) connectedTo(comm, to, peer int) {
	fc := n.comms[comm]
	if fc.rankOf != nil {
		to, peer = fc.rankOf[to], fc.rankOf[peer]
	}
	if m := &fc.joined[to]; m.connected != nil {
		m.connected(peer)
	} else {
		m.early = append(m.early, peer)
	}
}

// Listen fails: the run's ranks reach one another through Join.
func (n *network) Listen(string) (transport.Listener, error) {
	return nil, errors.New("simulation: the network has no addresses; ranks join it")
}

// Dial fails, as Listen does.
func (n *network) Dial(context.Context, string, []byte) (transport.Conn, error) {
	return nil, errors.New("simulation: the network has no addresses; ranks join it")
}

// connect returns rank's end of its connection to peer for communicator
// comm: the open one, or a new one that the faults may refuse.
func (n *network) connect(comm, rank, peer int) (transport.Conn, error) {
	if n.crashed[rank] {
		// Its actors may still be stopping: nothing of theirs leaves.
		return nil, fmt.Errorf("simulation: rank %d is down: %w", rank, transport.ErrClosed)
	}
	key := pairKey{comm, min(rank, peer), max(rank, peer)}
	if lo := n.pairs[key]; lo != nil {
		if lo.err == nil && lo.other.err == nil {
			return n.end(rank, lo), nil
		}
		if !lo.closed && !lo.other.closed {
			n.redials++ // a fault broke it
		}
	}
	lo := &conn{net: n, rank: int32(key.lo)}
	hi := &conn{net: n, rank: int32(key.hi), other: lo}
	lo.other = hi
	n.pairs[key] = lo
	if t := n.talked[rank]; t != nil {
		t[peer] = true
	}
	if t := n.talked[peer]; t != nil {
		t[rank] = true
	}
	n.open++
	n.peak = max(n.peak, n.open)
	n.byRank[key.lo] = append(n.byRank[key.lo], lo)
	n.byRank[key.hi] = append(n.byRank[key.hi], hi)
	end := n.end(rank, lo)
	now := n.loop.Elapsed()
	// A first dial reads the peer's address from the store, which may be
	// down: the dial waits for it, and gives up after the dial timeout.
	open := now
	for i := range n.faults {
		if f := &n.faults[i]; f.Kind == StoreOutage && f.active(open) {
			open = f.Until()
		}
	}
	lo.openAt, hi.openAt = open, open
	if open-now >= lazy.DefaultDialTimeout {
		n.loop.At(now+lazy.DefaultDialTimeout, func() { end.failDial(errStoreDown) })
		return end, nil
	}
	rtt := 2 * n.link(rank, peer).Latency
	if err := n.refusal(rank, peer, open); err != nil {
		n.loop.At(open+rtt, func() { end.failDial(err) })
		return end, nil
	}
	n.loop.At(open, func() {
		// A peer that asked for the pair meanwhile holds its end: it
		// would take the notice for a connection it has.
		if end.err == nil && !end.other.held {
			n.connectedTo(comm, peer, rank)
		}
	})
	return end, nil
}

// refusal is why a dial from rank to peer at time t fails, or nil.
func (n *network) refusal(rank, peer int, t time.Duration) error {
	switch {
	case n.restarted[peer]:
		return errUnknown
	case n.crashed[peer]:
		return errRefused
	}
	for i := range n.faults {
		f := &n.faults[i]
		if (f.Kind == Flap || f.Kind == Partition) && f.active(t) && f.touches(rank, peer) {
			return errCut
		}
	}
	return nil
}

// end returns rank's end of the pair lo, now that rank holds it.
func (n *network) end(rank int, lo *conn) *conn {
	end := lo
	if lo.me() != rank {
		end = lo.other
	}
	end.held = true
	return end
}

func (n *network) sameNode(a, b int) bool { return a/n.perNode == b/n.perNode }

// link is the link between two ranks: intra-node or through the NICs.
func (n *network) link(a, b int) Link {
	if n.sameNode(a, b) {
		return n.topo.Intra
	}
	l := n.topo.NIC
	l.Bandwidth /= n.topo.Oversubscription
	return l
}

// transfer is what the network decides about one frame when it is sent.
type transfer struct {
	arrival time.Duration
	corrupt bool // the receiver's checksum will reject it
}

// send reserves the ports a frame of size bytes from a to b uses, sent
// now on a connection open from open, and returns when its last byte
// reaches b. The frame is serialized
// on a's send port after what it sent before, crosses after the latency,
// and is received on b's receive port after what b received before. The
// plan's faults then slow, repeat, delay or hold it.
func (n *network) send(a, b, size int, open time.Duration) transfer {
	now := n.loop.Elapsed()
	l := n.link(a, b)
	pa, pb := &n.ports[a], &n.ports[b]
	sendPort, recvPort := &pa.nicSend, &pb.nicRecv
	if n.sameNode(a, b) {
		sendPort, recvPort = &pa.intraSend, &pb.intraRecv
	}
	overhead := n.topo.Overhead
	wire := time.Duration(float64(size) / l.Bandwidth * float64(time.Second))
	var extra time.Duration // after the last byte left: retransmits, delays
	held := now             // when the frame may leave: after a pause, clog or one-way partition
	var t transfer
	for i := range n.faults {
		f := &n.faults[i]
		if !f.active(now) || !f.touches(a, b) {
			continue
		}
		switch f.Kind {
		case Pause:
			if f.Rank == a {
				held = max(held, f.Until())
			}
		case Clog:
			held = max(held, f.Until())
		case OneWay:
			if f.inGroup(a) {
				held = max(held, f.Until())
			}
		case Slow:
			wire = time.Duration(float64(wire) * f.Factor)
			if len(f.Ranks) == 0 || len(f.Ranks) == 1 && f.Ranks[0] == a {
				overhead = time.Duration(float64(overhead) * f.Factor) // a slow sender
			}
		case Duplicate:
			if n.loop.rng.Float64() < f.P {
				wire *= 2
			}
		case Loss:
			for n.loop.rng.Float64() < f.P {
				extra += n.topo.Retransmit + wire
			}
		case Delay:
			extra += f.By
		case Jitter:
			extra += time.Duration(n.loop.rng.Int64N(int64(f.By)))
		case Corrupt:
			t.corrupt = t.corrupt || n.loop.rng.Float64() < f.P
		}
	}
	// A held frame waits at the sender without holding the ports: other
	// connections through them go on, as other sockets do past a stalled one.
	start := max(now+overhead, *sendPort, open)
	*sendPort = start + wire
	end := max(start+wire+l.Latency, *recvPort+wire)
	*recvPort = end
	end = max(end, held+wire+l.Latency) + extra
	t.arrival = n.unpaused(b, end)
	n.frames++
	n.bytes += int64(size)
	return t
}

// unpaused is when b reads a frame that lands at t: at once, or when the
// pause it lands in ends.
func (n *network) unpaused(b int, t time.Duration) time.Duration {
	for i := range n.faults {
		if f := &n.faults[i]; f.Kind == Pause && f.Rank == b && f.active(t) {
			t = f.Until()
		}
	}
	return t
}

// crash takes rank off the network: frames to it are dropped, and each
// peer it has a connection with sees that connection reset after the
// frames already on their way.
func (n *network) crash(rank int) {
	n.crashed[rank] = true
	for _, dead := range n.byRank[rank] {
		dead.shut = true
		dead.other.resetAfterInFlight(errCrashed)
	}
}

// forget drops the pair c is an end of, both of whose ends ended, unless
// a newer one took its place.
func (n *network) forget(c *conn) {
	lo := c
	if c.rank > c.other.rank {
		lo = c.other
	}
	for comm := range n.comms { // a conn keeps no communicator: there are one or two
		key := pairKey{comm, lo.me(), lo.peer()}
		if n.pairs[key] == lo {
			delete(n.pairs, key)
		}
	}
	n.open--
	for _, e := range [2]*conn{lo, lo.other} {
		r := e.me()
		if i := slices.Index(n.byRank[r], e); i >= 0 {
			n.byRank[r] = slices.Delete(n.byRank[r], i, i+1)
		}
	}
}

// connected reports whether ranks a and b ever had a connection: the
// engine blames a broken one on the peer across it. With forgets, only
// ranks a fault on its links names are known to have had one closed.
func (n *network) connected(a, b int) bool {
	if t := n.talked[a]; t != nil {
		return t[b]
	}
	for comm := range len(n.comms) {
		if n.pairs[pairKey{comm, min(a, b), max(a, b)}] != nil {
			return true
		}
	}
	return false
}

// cut resets every open connection the fault touches, both ends, each
// after the frames its peer already sent.
func (n *network) cut(f *Fault, err error) {
	for a := range n.byRank {
		for _, c := range n.byRank[a] {
			if c.rank < c.other.rank && c.err == nil && c.other.err == nil && f.touches(c.me(), c.peer()) {
				c.resetAfterInFlight(err)
				c.other.resetAfterInFlight(err)
			}
		}
	}
}
