package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// newCommID draws a communicator id from a fresh UUID.
func newCommID() uint64 {
	u := uuid.New()
	return binary.LittleEndian.Uint64(u[:8])
}

// rendezvous gathers the ranks of a new communicator. Each rank publishes
// its listening address in the store under the communicator's name; rank
// 0 waits until all have and publishes the roster (the communicator's id)
// or why it gave up, so that every rank learns who never joined. Ranks
// connect later, to the peers they talk to, when they first do
// (transport/lazy), and only then read those peers' addresses: the store
// serves O(size) requests and bytes to start a communicator, and one
// lookup per connection after.
//
// Keys are derived from the name, never from a process-wide counter (which
// deadlocks when only some ranks create a communicator), plus a generation
// counted per name, so that a name used again gets fresh keys.
func rendezvous(ctx context.Context, cfg *backend.Config) (*mesh, error) {
	if f, ok := cfg.Network.(transport.Fabric); ok {
		return joinFabric(f, cfg.Name, cfg.Rank, nil), nil
	}
	if cfg.Size == 1 {
		return &mesh{id: newCommID(), at: []int{0}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	ln, err := cfg.Network.Listen("")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	m, err := publish(ctx, cfg, ln)
	if err != nil {
		ln.Close()
	}
	return m, err
}

// publish publishes the address of ln, waits for the roster, and serves
// ln for the communicator's connections from then on if it succeeds.
func publish(ctx context.Context, cfg *backend.Config, ln transport.Listener) (*mesh, error) {
	st := store.WithPrefix(cfg.Store, "gocomms/"+cfg.Name)
	joined, err := st.Add(ctx, "joined", 1)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	st = store.WithPrefix(st, strconv.FormatInt((joined-1)/int64(cfg.Size), 10))
	if err := st.Set(ctx, "addr/"+strconv.Itoa(cfg.Rank), []byte(ln.Addr())); err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	var id uint64
	if cfg.Rank == 0 {
		id, err = collectRoster(ctx, st, cfg.Size)
	} else {
		id, err = awaitRoster(ctx, st, cfg.Rank, cfg.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	m, err := connectGroup(cfg, ln, id, resolver(st))
	if err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	return m, nil
}

// The roster key's value is one of these: rank 0 gave up, then why, as
// text; or every rank joined, then the communicator's id.
const (
	rosterFailed = 0
	rosterOK     = 1
)

// collectRoster waits until every rank has published its address and
// publishes the communicator's id, or why it gave up.
func collectRoster(ctx context.Context, st store.Store, size int) (uint64, error) {
	keys := make([]string, size)
	for r := range size {
		keys[r] = "addr/" + strconv.Itoa(r)
	}
	if err := st.Wait(ctx, keys...); err != nil {
		missing := absent(ctx, st, size)
		err = fmt.Errorf("waiting for every rank%s: %w", missingText(missing), err)
		// Tell the others why, so they fail now and name the same ranks,
		// and wait until they have read it: this process may serve the
		// store, which goes when it exits.
		why := append([]byte{rosterFailed}, "rank 0 gave up "...)
		why = append(why, err.Error()...)
		tell, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if st.Set(tell, "roster", why) == nil {
			var seen []string
			for r := 1; r < size; r++ {
				if !slices.Contains(missing, r) {
					seen = append(seen, "seen/"+strconv.Itoa(r))
				}
			}
			st.Wait(tell, seen...)
		}
		return 0, err
	}
	id := newCommID()
	if err := st.Set(ctx, "roster", binary.LittleEndian.AppendUint64([]byte{rosterOK}, id)); err != nil {
		return 0, err
	}
	return id, nil
}

func awaitRoster(ctx context.Context, st store.Store, rank, size int) (uint64, error) {
	v, err := st.Get(ctx, "roster")
	if err != nil {
		return 0, fmt.Errorf("waiting for rank 0 to see every rank join%s: %w", missingText(absent(ctx, st, size)), err)
	}
	if len(v) > 0 && v[0] == rosterFailed {
		st.Set(ctx, "seen/"+strconv.Itoa(rank), nil)
		return 0, errors.New(string(v[1:]))
	}
	if len(v) != 9 || v[0] != rosterOK {
		return 0, errors.New("malformed roster")
	}
	return binary.LittleEndian.Uint64(v[1:]), nil
}

// resolver looks a rank's address up in the store when this rank first
// dials it.
func resolver(st store.Store) func(ctx context.Context, rank int) (string, error) {
	return func(ctx context.Context, rank int) (string, error) {
		v, err := st.Get(ctx, "addr/"+strconv.Itoa(rank))
		return string(v), err
	}
}

// absent lists the ranks that have not published their address, for an
// error after the wait for them ended; nil if the store cannot tell (it is
// gone, say).
func absent(ctx context.Context, st store.Store, size int) []int {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var missing []int
	for r := range size {
		if ok, err := st.Check(ctx, "addr/"+strconv.Itoa(r)); err != nil {
			return nil
		} else if !ok {
			missing = append(missing, r)
		}
	}
	return missing
}

func missingText(missing []int) string {
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf(" (ranks %v have not joined)", missing)
}

// splitMesh gives the members of group, a split named name of the parent
// whose mesh is parent, connections over the parent's, this rank being
// group's me-th member: the members exchange fresh ids over the parent,
// and the group's first member's names the new communicator. Under a
// parent that maps no ranks (a world), the new mesh maps through group
// itself, which the caller leaves as it is: a shrink shares one group
// among the survivors a process runs.
func splitMesh(ctx context.Context, parent *mesh, name string, me int, group []int, exchange backend.Exchange) (*mesh, error) {
	var mine []byte
	if group != nil {
		mine = binary.LittleEndian.AppendUint64(nil, newCommID())
	}
	all, err := exchange(ctx, mine)
	if err != nil || group == nil {
		return nil, err
	}
	at := group
	if parent.at != nil {
		at = make([]int, len(group))
	}
	for i, g := range group {
		if len(all[g]) != 8 {
			return nil, fmt.Errorf("split: rank %d did not join group %v", g, group)
		}
		if parent.at != nil {
			at[i] = parent.at[g]
		}
	}
	id := binary.LittleEndian.Uint64(all[group[0]])
	switch {
	case parent.fabric != nil:
		return joinFabric(parent.fabric, name, me, at), nil
	case len(group) == 1:
		return &mesh{id: id, at: at}, nil
	}
	return parent.peers.open(id, me, at), nil
}
