package gocomms

import (
	"context"
	"fmt"
	"sync"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
)

// peers is one connection to each peer of a communicator made by NewComm,
// multiplexed so that the communicators split from it reuse it: a split
// opens virtual connections over its parent's instead of dialing. The last
// communicator to finalize closes the connections.
type peers struct {
	mu    sync.Mutex
	refs  int
	muxes []*mux.Mux // by rank in the communicator NewComm made; nil at this rank
}

// newPeers multiplexes conns (nil at this rank) for the communicators that
// will share them.
func newPeers(conns []transport.Conn) *peers {
	p := &peers{muxes: make([]*mux.Mux, len(conns))}
	for i, c := range conns {
		if c != nil {
			p.muxes[i] = mux.New(c)
		}
	}
	return p
}

// mesh is one communicator's connections: a virtual connection to each
// peer (nil at this rank) over the shared peers, whose indices the
// communicator's ranks map to through at.
type mesh struct {
	id    uint64
	conns []transport.Conn
	peers *peers // nil for a communicator of one rank
	at    []int  // communicator rank -> index into peers.muxes
}

// open gives communicator id, whose rank r is peers' at[r], a virtual
// connection to every rank but me, and takes a reference to p.
func (p *peers) open(id uint64, me int, at []int) (*mesh, error) {
	m := &mesh{id: id, conns: make([]transport.Conn, len(at)), peers: p, at: at}
	for r, i := range at {
		if r == me {
			continue
		}
		c, err := p.muxes[i].Open(id)
		if err != nil {
			for _, c := range m.conns {
				if c != nil {
					c.Close()
				}
			}
			return nil, fmt.Errorf("connection to rank %d: %w", r, err)
		}
		m.conns[r] = c
	}
	p.mu.Lock()
	p.refs++
	p.mu.Unlock()
	return m, nil
}

// release drops a communicator's reference; the last one closes every
// connection and waits until their last frames have left the process.
func (p *peers) release(ctx context.Context) error {
	p.mu.Lock()
	p.refs--
	last := p.refs == 0
	p.mu.Unlock()
	if !last {
		return nil
	}
	for _, m := range p.muxes {
		if m != nil {
			m.Close()
		}
	}
	for _, m := range p.muxes {
		if m == nil {
			continue
		}
		select {
		case <-m.Drained():
		case <-ctx.Done():
			return fmt.Errorf("frames not yet sent when closing: %w", context.Cause(ctx))
		}
	}
	return nil
}
