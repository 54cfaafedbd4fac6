package simulation

import (
	"errors"
	"fmt"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// network carries frames between simulated ranks at the times the
// topology gives, on the loop. A pair of ranks gets its connection when
// either first needs it, as transport/lazy gives real ranks theirs.
type network struct {
	loop      *Loop
	topo      Topology
	perNode   int
	ports     []ports          // by rank
	pairs     map[[2]int]*conn // by (lower rank, higher rank): the lower rank's end
	byRank    [][]*conn        // each rank's ends, in the order made: maps do not iterate in a fixed order
	crashed   []bool
	jitter    time.Duration // each frame waits up to this much more, drawn from the seed
	frames    int64
	bytes     int64
	onConnect func(rank, peer int) // the peer's connection to rank came up
}

// ports is when each of a rank's ports is next free, in virtual time.
type ports struct {
	intraSend, intraRecv time.Duration
	nicSend, nicRecv     time.Duration
}

func newNetwork(l *Loop, topo Topology, ranks int) *network {
	return &network{
		loop:    l,
		topo:    topo,
		perNode: ranks / topo.Nodes,
		ports:   make([]ports, ranks),
		pairs:   map[[2]int]*conn{},
		byRank:  make([][]*conn, ranks),
		crashed: make([]bool, ranks),
	}
}

// errCrashed is what the peers of a crashed rank see.
var errCrashed = errors.New("connection reset: peer crashed")

// connect returns rank's end of its connection to peer.
func (n *network) connect(rank, peer int) (transport.Conn, error) {
	key := [2]int{min(rank, peer), max(rank, peer)}
	lo := n.pairs[key]
	if lo == nil {
		lo = &conn{net: n, rank: key[0], peer: key[1]}
		hi := &conn{net: n, rank: key[1], peer: key[0], other: lo}
		lo.other = hi
		n.pairs[key] = lo
		n.byRank[lo.rank] = append(n.byRank[lo.rank], lo)
		n.byRank[hi.rank] = append(n.byRank[hi.rank], hi)
		if n.crashed[peer] {
			// A dial to a crashed rank is refused after a round trip.
			end := n.end(rank, lo)
			n.loop.AfterFunc(2*n.link(rank, peer).Latency, func() { end.fail(fmt.Errorf("dial rank %d: %w", peer, errCrashed)) })
		} else if n.onConnect != nil {
			n.onConnect(peer, rank)
		}
	}
	return n.end(rank, lo), nil
}

func (n *network) end(rank int, lo *conn) *conn {
	if lo.rank == rank {
		return lo
	}
	return lo.other
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

// arrival reserves the ports a frame of size bytes from a to b uses, sent
// now, and returns when its last byte reaches b. The frame is serialized
// on a's send port after what it sent before, crosses after the latency,
// and is received on b's receive port after what b received before.
func (n *network) arrival(a, b, size int) time.Duration {
	now := n.loop.Elapsed()
	l := n.link(a, b)
	pa, pb := &n.ports[a], &n.ports[b]
	send, recv := &pa.nicSend, &pb.nicRecv
	if n.sameNode(a, b) {
		send, recv = &pa.intraSend, &pb.intraRecv
	}
	wire := time.Duration(float64(size) / l.Bandwidth * float64(time.Second))
	start := max(now+n.topo.Overhead, *send)
	*send = start + wire
	end := max(start+wire+l.Latency, *recv+wire)
	*recv = end
	if n.jitter > 0 {
		end += time.Duration(n.loop.rng.Int64N(int64(n.jitter)))
	}
	n.frames++
	n.bytes += int64(size)
	return end
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
