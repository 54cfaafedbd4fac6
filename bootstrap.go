package gocomms

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// mesh is a communicator's connections: one per peer, nil at this rank.
type mesh struct {
	id    uint64
	conns []transport.Conn
}

// newCommID draws a communicator id from a fresh UUID.
func newCommID() uint64 {
	u := uuid.New()
	return binary.LittleEndian.Uint64(u[:8])
}

// rendezvous connects every rank of a new communicator: each publishes its
// listening address in the store under the communicator's name, rank 0 the
// communicator id, then the lower rank of every pair dials the higher.
func rendezvous(ctx context.Context, cfg *Config) (*mesh, error) {
	if cfg.Size == 1 {
		return &mesh{id: newCommID(), conns: make([]transport.Conn, 1)}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	ln, err := cfg.Network.Listen("")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()

	st := store.WithPrefix(cfg.Store, "gocomms/"+cfg.Name)
	if cfg.Rank == 0 {
		if err := st.Set(ctx, "id", binary.LittleEndian.AppendUint64(nil, newCommID())); err != nil {
			return nil, fmt.Errorf("rendezvous: %w", err)
		}
	}
	if err := st.Set(ctx, "addr/"+strconv.Itoa(cfg.Rank), []byte(ln.Addr())); err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	keys := make([]string, cfg.Size+1)
	keys[0] = "id"
	for r := range cfg.Size {
		keys[r+1] = "addr/" + strconv.Itoa(r)
	}
	vals, err := st.MultiGet(ctx, keys...)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: waiting for every rank: %w", err)
	}
	if len(vals[0]) != 8 {
		return nil, fmt.Errorf("rendezvous: malformed communicator id (%d bytes)", len(vals[0]))
	}
	id := binary.LittleEndian.Uint64(vals[0])
	addrs := make([]string, cfg.Size)
	for r := range addrs {
		addrs[r] = string(vals[r+1])
	}
	conns, err := connect(ctx, cfg.Network, ln, cfg.Rank, addrs, id)
	if err != nil {
		return nil, err
	}
	return &mesh{id: id, conns: conns}, nil
}

// splitMesh connects the members of group, a split of the parent described
// by parent: the members exchange addresses over the parent, and the
// group's first member's id names the new communicator.
func splitMesh(ctx context.Context, parent *Config, group []int, cfg *Config, exchange Exchange) (*mesh, error) {
	var mine []byte
	var ln transport.Listener
	if group != nil {
		var err error
		if ln, err = parent.Network.Listen(""); err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		defer ln.Close()
		mine = binary.LittleEndian.AppendUint64(nil, newCommID())
		mine = append(mine, ln.Addr()...)
	}
	all, err := exchange(ctx, mine)
	if err != nil || group == nil {
		return nil, err
	}
	addrs := make([]string, len(group))
	for i, g := range group {
		if len(all[g]) < 8 {
			return nil, fmt.Errorf("split: rank %d did not join group %v", g, group)
		}
		addrs[i] = string(all[g][8:])
	}
	id := binary.LittleEndian.Uint64(all[group[0]])
	me := slices.Index(group, parent.Rank)
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	conns, err := connect(ctx, parent.Network, ln, me, addrs, id)
	if err != nil {
		return nil, err
	}
	return &mesh{id: id, conns: conns}, nil
}

// connect dials every higher rank and accepts every lower one. The hello
// carries the communicator id and the dialer's rank.
func connect(ctx context.Context, net transport.Network, ln transport.Listener, rank int, addrs []string, id uint64) (conns []transport.Conn, err error) {
	conns = make([]transport.Conn, len(addrs))
	defer func() {
		if err != nil {
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	hello := binary.LittleEndian.AppendUint64(nil, id)
	hello = binary.LittleEndian.AppendUint32(hello, uint32(rank))
	for peer := rank + 1; peer < len(addrs); peer++ {
		if conns[peer], err = net.Dial(ctx, addrs[peer], hello); err != nil {
			return nil, fmt.Errorf("connect to rank %d at %s: %w", peer, addrs[peer], err)
		}
	}
	for range rank {
		c, h, err := ln.Accept(ctx)
		if err != nil {
			return nil, fmt.Errorf("accept from lower ranks: %w", err)
		}
		peer, err := checkHello(h, id, rank)
		if err == nil && conns[peer] != nil {
			err = fmt.Errorf("rank %d connected twice", peer)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("accept: %w", err)
		}
		conns[peer] = c
	}
	return conns, nil
}

func checkHello(h []byte, id uint64, rank int) (int, error) {
	if len(h) != 12 {
		return 0, errors.New("malformed hello")
	}
	if got := binary.LittleEndian.Uint64(h); got != id {
		return 0, fmt.Errorf("hello from another communicator (id %x, want %x)", got, id)
	}
	peer := int(binary.LittleEndian.Uint32(h[8:]))
	if peer >= rank {
		return 0, fmt.Errorf("hello from rank %d, which should accept rather than dial", peer)
	}
	return peer, nil
}
