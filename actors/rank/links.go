package rank

import "github.com/asynkron/protoactor-go/actor"

// peerLink is the rank's link to one peer.
type peerLink struct {
	peer int
	pid  *actor.PID
	live bool // the link actor has not stopped
	lend bool // its connection borrows large payloads (transport.Borrower)
	left bool // the peer said goodbye: the end of its connection is no failure
	// lost is why the link's connection last broke, while it reconnects.
	lost error
}

// links are a rank's links, spawned on first use. A rank of a large
// communicator talks to a few peers (a ring's two, a tree's log N), so
// nothing here grows with the communicator's size; and the links are
// walked in the order they were made, never a map's, so that the simulator
// replays what a rank sends to them.
type links struct {
	byPeer map[int]*peerLink
	byPID  map[string]*peerLink
	order  []*peerLink
	live   int // links whose actor has not stopped
}

func newLinks() links {
	return links{byPeer: map[int]*peerLink{}, byPID: map[string]*peerLink{}}
}

func (ls *links) add(peer int, pid *actor.PID, lend bool) *peerLink {
	l := &peerLink{peer: peer, pid: pid, live: true, lend: lend}
	ls.byPeer[peer] = l
	ls.byPID[pid.Id] = l
	ls.order = append(ls.order, l)
	ls.live++
	return l
}

// stopped records that l's actor stopped.
func (ls *links) stopped(l *peerLink) {
	if l.live {
		l.live = false
		ls.live--
	}
}
