package agree

import (
	"maps"
	"slices"
)

// Value is what the survivors agree on.
type Value struct {
	Flags  uint64 `json:"flags"`  // the AND of the flags of the ranks that proposed
	Failed []int  `json:"failed"` // sorted: the ranks some survivor found failed
}

// Kind says what a message does.
type Kind uint8

// The messages, in the order a round sends them.
const (
	Prepare  Kind = iota + 1 // coordinator: promise this ballot
	Promise                  // reply: promised, with an accepted value if any and the sender's proposal
	Accept                   // coordinator: accept this value under this ballot
	Accepted                 // reply: accepted
	Decide                   // coordinator: the value is decided
	Nack                     // reply: promised a higher ballot (Ballot)
)

// Msg is one message of the protocol.
type Msg struct {
	Kind     Kind
	From, To int
	Ballot   uint64
	// Promise: the ballot the sender accepted a value under (0: none) and
	// that value. Accept and Decide: the value.
	AcceptedBallot uint64
	Value          Value
	// Promise: the sender's proposal.
	Flags  uint64
	Failed []int
}

// Node is the protocol at one rank.
type Node struct {
	rank, size int
	flags      uint64
	failed     map[int]bool // this node's view: sparse, since every rank of a large job holds one

	// As an acceptor.
	promised       uint64
	acceptedBallot uint64
	accepted       Value
	decided        *Value

	// As a coordinator: ballot is nonzero while it leads a round.
	ballot   uint64
	phase    Kind // Prepare or Accept: the replies it waits for
	replied  []bool
	missing  int // ranks believed alive yet to reply
	cursor   int // every rank below it replied or failed
	promises []Msg
	proposal Value
	maxSeen  uint64 // the highest ballot heard of
}

// New starts the protocol at rank of size ranks, proposing flags and the
// ranks it knows have failed, and returns the node and what it sends.
func New(rank, size int, flags uint64, failed []int) (*Node, []Msg) {
	n := &Node{rank: rank, size: size, flags: flags, failed: map[int]bool{}}
	for _, r := range failed {
		if r >= 0 && r < size {
			n.failed[r] = true
		}
	}
	return n, n.lead()
}

// Decided returns the decided value, once there is one.
func (n *Node) Decided() (Value, bool) {
	if n.decided == nil {
		return Value{}, false
	}
	return *n.decided, true
}

// watchWindow bounds the ranks a coordinator has watched at once: the
// lowest that have yet to reply. As they reply the window moves on, so a
// rank that never replies is watched in the end, and a round over many
// ranks costs no scan of all of them per reply.
const watchWindow = 16

// WaitingOn lists ranks the node waits for, which its links should watch,
// so that a failure among them is found: as a coordinator, the lowest
// watchWindow yet to reply; undecided, the coordinator it believes alive;
// decided, none.
func (n *Node) WaitingOn() []int {
	if n.ballot != 0 {
		for n.cursor < n.size && (n.failed[n.cursor] || n.replied[n.cursor]) {
			n.cursor++
		}
		var l []int
		for r := n.cursor; r < n.size && len(l) < watchWindow; r++ {
			if !n.failed[r] && !n.replied[r] && r != n.rank {
				l = append(l, r)
			}
		}
		return l
	}
	if c := n.coordinator(); n.decided == nil && c != n.rank {
		return []int{c}
	}
	return nil
}

// Fail records that rank failed, and returns what the node sends now: a
// coordinator stops waiting for it, and a node that finds itself the
// lowest rank alive takes over.
func (n *Node) Fail(rank int) []Msg {
	if rank < 0 || rank >= n.size || n.failed[rank] || rank == n.rank {
		return nil
	}
	n.failed[rank] = true
	if n.ballot != 0 {
		if !n.replied[rank] {
			n.missing--
		}
		return n.progress()
	}
	return n.lead()
}

// Receive handles m, sent to this node, and returns what it sends now.
// Messages from ranks it believes failed are ignored.
func (n *Node) Receive(m Msg) []Msg {
	if m.From < 0 || m.From >= n.size || n.failed[m.From] {
		return nil
	}
	n.maxSeen = max(n.maxSeen, m.Ballot)
	switch m.Kind {
	case Prepare:
		if m.Ballot <= n.promised {
			return []Msg{n.reply(m, Nack, n.promised)}
		}
		n.promised = m.Ballot
		r := n.reply(m, Promise, m.Ballot)
		r.AcceptedBallot, r.Value = n.acceptedBallot, n.accepted
		r.Flags, r.Failed = n.flags, n.failedList()
		return []Msg{r}
	case Accept:
		if m.Ballot < n.promised {
			return []Msg{n.reply(m, Nack, n.promised)}
		}
		n.promised, n.acceptedBallot, n.accepted = m.Ballot, m.Ballot, m.Value
		return []Msg{n.reply(m, Accepted, m.Ballot)}
	case Decide:
		if n.decided == nil {
			v := m.Value
			n.decided = &v
		}
		n.ballot = 0
		return nil
	case Promise, Accepted:
		if m.Ballot != n.ballot || n.phase != m.Kind-1 || n.replied[m.From] {
			return nil
		}
		n.replied[m.From] = true
		n.missing--
		if m.Kind == Promise {
			n.promises = append(n.promises, m)
		}
		return n.progress()
	case Nack:
		if m.Ballot > n.ballot && n.ballot != 0 {
			// A higher ballot leads: follow it, and lead again, above
			// it, once its coordinator has failed, now or later.
			n.ballot = 0
			if leader := int(m.Ballot & 0xffffffff); leader < n.size && n.failed[leader] {
				return n.lead()
			}
		}
	}
	return nil
}

func (n *Node) reply(m Msg, k Kind, ballot uint64) Msg {
	return Msg{Kind: k, From: n.rank, To: m.From, Ballot: ballot}
}

// coordinator is the lowest rank this node believes alive.
func (n *Node) coordinator() int {
	for r := range n.size {
		if !n.failed[r] {
			return r
		}
	}
	return -1
}

// lead starts a round if this node is the coordinator and none is under
// way, with a ballot above every one it has heard of. A node that has
// decided leads too: the others may not have, and its round decides the
// same value again.
func (n *Node) lead() []Msg {
	if n.coordinator() != n.rank || n.ballot != 0 {
		return nil
	}
	round := n.maxSeen>>32 + 1
	n.ballot = round<<32 | uint64(n.rank)
	n.maxSeen = n.ballot
	return n.phaseStart(Prepare)
}

// phaseStart sends k to every rank believed alive, itself included, and
// waits for their replies.
func (n *Node) phaseStart(k Kind) []Msg {
	n.phase = k
	n.replied = make([]bool, n.size)
	n.missing, n.cursor = 0, 0
	var out []Msg
	var v Value // a Prepare carries none
	if k != Prepare {
		v = n.proposal
	}
	for r := range n.size {
		if !n.failed[r] {
			out = append(out, Msg{Kind: k, From: n.rank, To: r, Ballot: n.ballot, Value: v})
		}
	}
	n.missing = len(out)
	return out
}

// progress moves the round on once every rank believed alive replied.
func (n *Node) progress() []Msg {
	if n.missing > 0 {
		return nil
	}
	if n.phase == Prepare {
		n.proposal = n.choose()
		return n.phaseStart(Accept)
	}
	out := n.phaseStart(Decide)
	n.ballot = 0
	return out
}

// choose is the value of a round whose promises are all in: the value
// accepted under the highest ballot, if any was, since it may be decided
// already; else the AND of the proposals' flags and the union of the
// failed ranks every survivor knows of.
func (n *Node) choose() Value {
	var best *Msg
	for i := range n.promises {
		p := &n.promises[i]
		if p.AcceptedBallot != 0 && (best == nil || p.AcceptedBallot > best.AcceptedBallot) {
			best = p
		}
	}
	if best != nil {
		return best.Value
	}
	v := Value{Flags: ^uint64(0)}
	failed := maps.Clone(n.failed)
	for _, p := range n.promises {
		if n.failed[p.From] {
			continue // failed after it promised: it proposes nothing
		}
		v.Flags &= p.Flags
		for _, r := range p.Failed {
			if r >= 0 && r < n.size {
				failed[r] = true
			}
		}
	}
	v.Failed = slices.Sorted(maps.Keys(failed))
	return v
}

func (n *Node) failedList() []int { return slices.Sorted(maps.Keys(n.failed)) }
