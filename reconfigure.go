package gocomms

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gocomms/gocomms/commerr"
)

// Members lists the init handles of the processes Reconfigure makes a
// communicator of: InOrder fixes the ranks, AnyOrder lets the engine
// choose, as torchcomms' list and set of handles.
type Members struct {
	handles []string
	ordered bool
}

// InOrder makes the process whose handle is handles[i] rank i.
func InOrder(handles ...string) Members { return Members{handles: handles, ordered: true} }

// AnyOrder lets Reconfigure rank the processes: the quorum first, in
// their old order, then the rest, in an order every member computes alike.
func AnyOrder(handles ...string) Members { return Members{handles: handles} }

// handlePrefix starts every init handle, naming its format.
const handlePrefix = "gocomms1"

// handle is an init handle parsed: where the process was, and where it
// is to be reached.
type handle struct {
	prev     string // the membership of the communicator the handle came from; "" for none
	prevRank int    // its rank there; -1 for none
	addr     string
}

func (h handle) String() string {
	return strings.Join([]string{handlePrefix, strconv.Itoa(h.prevRank), url.QueryEscape(h.prev), url.QueryEscape(h.addr)}, "|")
}

func parseHandle(s string) (handle, error) {
	f := strings.Split(s, "|")
	if len(f) != 4 || f[0] != handlePrefix {
		return handle{}, commerr.Invalid("%q is not an init handle", s)
	}
	rank, err := strconv.Atoi(f[1])
	prev, err2 := url.QueryUnescape(f[2])
	addr, err3 := url.QueryUnescape(f[3])
	if err != nil || err2 != nil || err3 != nil || rank < -1 || addr == "" || (prev == "") != (rank == -1) {
		return handle{}, commerr.Invalid("%q is not an init handle", s)
	}
	return handle{prev: prev, prevRank: rank, addr: addr}, nil
}

// InitHandle returns the handle by which this process joins the
// communicator the next Reconfigure makes, as torchcomms'
// get_init_handle: it says where the process is reached and which
// communicator it comes from, for the quorum rule. The caller passes the
// handles of every future member to each of them (through a store, or
// package quorum). It is the same until that Reconfigure.
func (c *Comm) InitHandle() (string, error) {
	r, err := c.reconfigurable("init_handle")
	if err != nil {
		return "", err
	}
	addr, err := r.Endpoint()
	if err != nil {
		return "", c.opError(&Op{Name: "init_handle"}, err)
	}
	h := handle{prevRank: -1, addr: addr}
	if c.cfg.Size > 0 {
		h.prev, h.prevRank = c.membership, c.cfg.Rank
	}
	return h.String(), nil
}

// Reconfigure returns the communicator of the processes whose handles
// members lists, as torchcomms' reconfigure, once every one of them has
// joined: each of them calls it with the same id, fresh each time, and the
// same members. Under AnyOrder, the quorum (the largest group of handles
// that come from the same communicator) keeps its order and ranks first;
// the others grow in after it. Quorum on the result says which ranks came
// from there, and so hold its state. This communicator is left as it was:
// finalize it when done with it. opts configure the new communicator,
// which otherwise inherits this one's transport, runtime, logger and
// failure detector, and a fresh timeout; its name is the one NewComm gave
// the communicator this one comes from.
func (c *Comm) Reconfigure(ctx context.Context, id string, members Members, opts ...Option) (*Comm, error) {
	next, err := c.form(ctx, id, members, opts)
	if err != nil {
		return nil, err
	}
	// Every member is there once a barrier completes: one that never
	// calls is named by its timeout, one that died by its refused dial.
	barrier := barrierOp()
	if err := next.internal(ctx, &barrier, nil, nil); err != nil {
		next.Abort(err)
		next.Finalize(context.WithoutCancel(ctx))
		return nil, c.opError(&Op{Name: OpReconfigure}, fmt.Errorf("waiting for every member to join: %w", err))
	}
	return next, nil
}

// form makes the communicator Reconfigure returns, without waiting for
// its members.
func (c *Comm) form(ctx context.Context, id string, members Members, opts []Option) (*Comm, error) {
	fail := func(err error) (*Comm, error) { return nil, c.opError(&Op{Name: OpReconfigure}, err) }
	r, err := c.reconfigurable(OpReconfigure)
	if err != nil {
		return nil, err
	}
	mine, err := c.InitHandle()
	if err != nil {
		return nil, err
	}
	if id == "" || id == c.membership {
		return fail(commerr.Invalid("reconfigure needs a fresh id, got %q", id))
	}
	order, quorum, err := rankHandles(members)
	if err != nil {
		return fail(err)
	}
	me := slices.IndexFunc(order, func(h handle) bool { return h.String() == mine })
	if me < 0 {
		return fail(commerr.Invalid("this process's handle %s is not among the %d members", mine, len(order)))
	}
	addrs := make([]string, len(order))
	for i, h := range order {
		addrs[i] = h.addr
	}
	base := []Option{WithRank(me), WithSize(len(order)), WithNetwork(c.cfg.Network), WithRuntime(runtimeOf(c.cfg)),
		WithLogger(c.logger), WithFailureDetector(c.cfg.Heartbeat, c.cfg.Silence), WithAlgorithms(c.cfg.Registry), c.metricsOption()}
	o, err := resolve(c.family, c.cfg.Device, append(base, opts...))
	if err != nil {
		return fail(err)
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	b, err := r.Reconfigure(ctx, &o.cfg, h.Sum64(), addrs)
	if err != nil {
		return fail(err)
	}
	next := newComm(o, c.backendName, b, false, nil, c.family)
	next.membership, next.quorum = id, quorum
	return next, nil
}

// Quorum lists the ranks of a communicator Reconfigure made whose handles
// came from the quorum: the largest group that shared a communicator
// before. A newcomer that grew in gets its state from one of them. It is
// nil for a communicator made otherwise.
func (c *Comm) Quorum() []int { return slices.Clone(c.quorum) }

// IsInitialized reports whether the communicator has members: false for
// one created with WithReconfigure, which Reconfigure has yet to make.
func (c *Comm) IsInitialized() bool { return c.cfg.Size > 0 }

func (c *Comm) reconfigurable(op OpName) (Reconfigurable, error) {
	r, ok := c.backend.(Reconfigurable)
	if !ok {
		return nil, c.opError(&Op{Name: op}, commerr.Invalid("backend %q cannot reconfigure", c.backendName))
	}
	return r, nil
}

// rankHandles parses members' handles and orders them: as given, or
// the quorum first in its old order and then the rest, sorted. It
// returns the new ranks of the quorum's members too.
func rankHandles(members Members) ([]handle, []int, error) {
	if len(members.handles) == 0 {
		return nil, nil, commerr.Invalid("reconfigure needs at least one member")
	}
	hs := make([]handle, len(members.handles))
	seen := make(map[string]bool, len(hs))
	groups := map[string]int{}
	for i, s := range members.handles {
		h, err := parseHandle(s)
		if err != nil {
			return nil, nil, err
		}
		if seen[h.addr] {
			return nil, nil, commerr.Invalid("two members are reached at %s", h.addr)
		}
		seen[h.addr] = true
		if h.prev != "" {
			groups[h.prev]++
		}
		hs[i] = h
	}
	// The quorum is the largest group; of equals, the least name, so that
	// every member picks the same.
	var quorum string
	for prev, n := range groups {
		if n > groups[quorum] || n == groups[quorum] && prev < quorum {
			quorum = prev
		}
	}
	inQuorum := func(h handle) bool { return quorum != "" && h.prev == quorum }
	if !members.ordered {
		slices.SortStableFunc(hs, func(a, b handle) int {
			if qa, qb := inQuorum(a), inQuorum(b); qa != qb {
				if qa {
					return -1
				}
				return 1
			}
			return cmp.Or(cmp.Compare(a.prev, b.prev), cmp.Compare(a.prevRank, b.prevRank), cmp.Compare(a.addr, b.addr))
		})
	}
	var ranks []int
	for i, h := range hs {
		if inQuorum(h) {
			ranks = append(ranks, i)
		}
	}
	return hs, ranks, nil
}
