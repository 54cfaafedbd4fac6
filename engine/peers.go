package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"sync"
	"time"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/lazy"
	"github.com/gocomms/gocomms/transport/mux"
)

// peers is the connections of the process that NewComm made a
// communicator for: one to each peer, dialled when first needed (see
// transport/lazy), multiplexed so that the communicators split from it
// reuse it. The last communicator to finalize closes them.
type peers struct {
	group *lazy.Group

	mu    sync.Mutex
	muxes []*mux.Mux       // by index in the communicator NewComm made; made on first use
	comms map[uint64]*mesh // the communicators sharing the connections, by id: the last to go closes them
	// failed marks the peers a communicator found failed: closing, the
	// process does not wait for them to take its last frames, which a
	// hung process never does, and waits a while only for the others,
	// which may be closing too.
	failed map[int]bool
}

func newPeers(size int) *peers {
	return &peers{muxes: make([]*mux.Mux, size), comms: map[uint64]*mesh{}}
}

// connectGroup makes the connections of this process's rank of a new
// communicator of cfg.Size ranks, id, listening on ln: each made on first
// use, to the address resolve gives for its peer.
func connectGroup(cfg *backend.Config, ln transport.Listener, id uint64, resolve func(context.Context, int) (string, error)) (*mesh, error) {
	p := newPeers(cfg.Size)
	g, err := lazy.New(lazy.Config{
		Network: cfg.Network, Listener: ln, ID: id, Members: cfg.Size, Self: cfg.Rank,
		Resolve: resolve, OnConnect: p.connectedTo,
	})
	if err != nil {
		return nil, err
	}
	p.group = g
	return p.open(id, cfg.Rank, identity(cfg.Size)), nil
}

// identity is the ranks 0 to n-1, in order.
func identity(n int) []int {
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// mesh is one communicator's view of the shared peers: its rank r is the
// peers' index at[r]; or, over a transport.Fabric, the fabric's.
type mesh struct {
	id    uint64
	name  string // the communicator's, which a fabric knows it by
	me    int    // this process's rank in the communicator
	peers *peers // nil for a communicator of one rank, and over a fabric
	at    []int
	// fabric, if set, connects the communicator itself (at is then the
	// fabric's indices, nil for 0 to size-1), through dial once watch has
	// joined it.
	fabric transport.Fabric
	dial   func(rank int) (transport.Conn, error)
	// connected tells the communicator's rank actor that the connection to
	// one of its ranks came up; set by watch.
	connected func(rank int)
}

// open registers communicator id, whose rank r is the peers' index at[r]
// and whose rank here is me, among those sharing p.
func (p *peers) open(id uint64, me int, at []int) *mesh {
	m := &mesh{id: id, me: me, peers: p, at: at}
	p.mu.Lock()
	p.comms[id] = m
	p.mu.Unlock()
	return m
}

// conn opens m's virtual connection to rank over the shared connection,
// which dials on its first frame. After that connection failed, the first
// communicator's link to reconnect makes a new one, which the others
// then share.
func (m *mesh) conn(rank int) (transport.Conn, error) {
	if m.dial != nil {
		return m.dial(rank)
	}
	p, i := m.peers, m.at[rank]
	p.mu.Lock()
	x := p.muxes[i]
	if x == nil || x.Err() != nil {
		// Dialled now, not on the first frame: a peer that is only
		// heard from is found gone when the dial fails.
		c, err := p.group.Dial(i)
		if err != nil {
			p.mu.Unlock()
			return nil, fmt.Errorf("connection to rank %d: %w", rank, err)
		}
		if x != nil {
			x.Close()
		}
		x = mux.New(c)
		p.muxes[i] = x
	}
	p.mu.Unlock()
	c, err := x.Open(m.id)
	if errors.Is(err, mux.ErrOpened) {
		// The connection lives on but carried this communicator before:
		// the peer closed its end (it aborted or finalized), and the
		// connection will not carry it again. Redialing cannot help.
		return nil, fmt.Errorf("connection to rank %d: its communicator closed: %w: %w", rank, err, transport.ErrRefused)
	}
	if err != nil {
		return nil, fmt.Errorf("connection to rank %d: %w", rank, err)
	}
	return c, nil
}

// peerFailed records that m's rank failed, or left.
func (m *mesh) peerFailed(rank int) {
	p := m.peers
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.failed == nil {
		p.failed = map[int]bool{}
	}
	p.failed[m.at[rank]] = true
	p.mu.Unlock()
}

// watch calls connected for every rank of m whose connection is up, now
// and whenever another comes up, until m is released.
func (m *mesh) watch(connected func(rank int)) {
	if m.fabric != nil {
		m.dial = m.fabric.Join(m.name, m.at, m.me, connected)
		return
	}
	p := m.peers
	if p == nil {
		return
	}
	var up []int
	p.mu.Lock()
	m.connected = connected
	for r, i := range m.at {
		if r != m.me && p.group.Up(i) {
			up = append(up, r)
		}
	}
	p.mu.Unlock()
	for _, r := range up {
		connected(r)
	}
}

// connectedTo passes on the news that the connection to index i came up to
// every communicator that has a rank there.
func (p *peers) connectedTo(i int) {
	var tell []func()
	p.mu.Lock()
	for _, m := range p.comms {
		if m.connected == nil {
			continue
		}
		for r, at := range m.at {
			if at == i && r != m.me {
				tell = append(tell, func() { m.connected(r) })
			}
		}
	}
	p.mu.Unlock()
	for _, t := range tell {
		t()
	}
}

// release unregisters m; the last communicator to go closes every
// connection and waits until their last frames have left the process,
// for at most drainAfterFailure once a peer failed.
func (m *mesh) release(ctx context.Context) error {
	p := m.peers
	if p == nil {
		return nil
	}
	p.mu.Lock()
	delete(p.comms, m.id)
	last := len(p.comms) == 0
	muxes := p.muxes
	failed := maps.Clone(p.failed)
	p.mu.Unlock()
	if !last {
		return nil
	}
	for _, x := range muxes {
		if x != nil {
			x.Close()
		}
	}
	p.group.Close()
	broke := len(failed) > 0
	if broke {
		// The communicator broke. Its last frames still matter (a report
		// that a peer failed tells the others whom to name), but a peer
		// closing too may never read them, each waiting for the other.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, drainAfterFailure)
		defer cancel()
	}
	for i, x := range muxes {
		if x == nil || failed[i] {
			continue
		}
		select {
		case <-x.Drained():
		case <-ctx.Done():
			if broke {
				return nil
			}
			return fmt.Errorf("frames not yet sent when closing: %w", context.Cause(ctx))
		}
	}
	return nil
}

// drainAfterFailure bounds the wait for a broken communicator's last
// frames to leave.
const drainAfterFailure = time.Second

// joinFabric is the mesh of rank me of the communicator name over the
// fabric f, whose rank r is at[r] there (nil: r). Its id is the name's hash, the
// same on every rank without a word exchanged.
func joinFabric(f transport.Fabric, name string, me int, at []int) *mesh {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &mesh{id: h.Sum64(), name: name, me: me, at: at, fabric: f}
}
