package rank

import (
	"cmp"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/link"
)

// peerLink is the rank's link to one peer.
type peerLink struct {
	peer  int
	pid   *actor.PID
	live  bool // the link actor has not stopped
	lend  bool // its connection borrows large payloads (transport.Borrower)
	plane *link.Plane
	// lost is why the link's connection last broke, while it reconnects.
	lost error

	// With Config.ReleaseLinks: the running operation holds the link
	// (inUse); the rank released it and waits for the peer to (releasing),
	// or the peer released its end (asked); and, while it is being
	// released, the running collective asked for the peer or the peer
	// connected again (again), which a new link serves.
	inUse, releasing, asked, again bool
	// lossless says the link's connection loses nothing short of ending
	// (transport.Lossless): only such a link is released, as one that
	// may reset and resume could lose its release with the connection.
	lossless bool
}

// links are a rank's links, spawned on first use. A rank of a large
// communicator talks to a few peers (a ring's two, a tree's log N), so
// nothing here grows with the communicator's size, and slices serve
// better than maps: a simulation keeps 100,000 ranks' links, and looks
// one up for every peer of every operation. The links are walked in the
// order they were made, never a map's, so that the simulator replays what
// a rank sends to them.
type links struct {
	byPeer []*peerLink // sorted by peer
	order  []*peerLink
	live   int       // links whose actor has not stopped
	sets   []linkSet // most recently used first
}

// linkSet is the links of a list of peers, as requests hold them
// (Request.Links and Lend). A rank's link to a peer, once made, stays the
// same actor, so requests with the same peers share one set instead of
// each making its own.
type linkSet struct {
	peers  []int
	pids   []*actor.PID
	lend   []bool
	planes []*link.Plane
}

// setsKept bounds the link sets kept: a job repeats a few collectives.
const setsKept = 8

// setOf returns the kept set of peers, or nil.
func (ls *links) setOf(peers []int) *linkSet {
	for i := range ls.sets {
		if slices.Equal(ls.sets[i].peers, peers) {
			s := ls.sets[i]
			copy(ls.sets[1:i+1], ls.sets[:i])
			ls.sets[0] = s
			return &ls.sets[0]
		}
	}
	return nil
}

// keepSet keeps the links of peers for the next requests: none of the
// three changes afterwards.
func (ls *links) keepSet(s linkSet) {
	if len(ls.sets) < setsKept {
		ls.sets = append(ls.sets, linkSet{})
	}
	copy(ls.sets[1:], ls.sets)
	ls.sets[0] = s
}

func (ls *links) add(peer int, pid *actor.PID, lend bool, plane *link.Plane) *peerLink {
	l := &peerLink{peer: peer, pid: pid, live: true, lend: lend, plane: plane}
	i, _ := ls.search(peer)
	ls.byPeer = slices.Insert(ls.byPeer, i, l)
	ls.order = append(ls.order, l)
	ls.live++
	return l
}

// remove forgets l, released or failed while being released.
func (ls *links) remove(l *peerLink) {
	ls.stopped(l)
	if i, ok := ls.search(l.peer); ok && ls.byPeer[i] == l {
		ls.byPeer = slices.Delete(ls.byPeer, i, i+1)
	}
	if i := slices.Index(ls.order, l); i >= 0 {
		ls.order = slices.Delete(ls.order, i, i+1)
	}
}

// forgetSets drops the kept sets that hold the link to peer, which is
// being released.
func (ls *links) forgetSets(peer int) {
	ls.sets = slices.DeleteFunc(ls.sets, func(s linkSet) bool { return slices.Contains(s.peers, peer) })
}

// of returns the link to peer, or nil.
func (ls *links) of(peer int) *peerLink {
	if i, ok := ls.search(peer); ok {
		return ls.byPeer[i]
	}
	return nil
}

func (ls *links) search(peer int) (int, bool) {
	return slices.BinarySearchFunc(ls.byPeer, peer, func(l *peerLink, peer int) int { return cmp.Compare(l.peer, peer) })
}

// ofActor returns the link whose actor is id, or nil. It is asked once
// per link, when the actor stops, so it walks the links.
func (ls *links) ofActor(id string) *peerLink {
	for _, l := range ls.order {
		if l.pid.Id == id {
			return l
		}
	}
	return nil
}

// stopped records that l's actor stopped.
func (ls *links) stopped(l *peerLink) {
	if l.live {
		l.live = false
		ls.live--
	}
}
