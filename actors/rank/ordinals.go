package rank

import "github.com/gocomms/gocomms/actors/collective"

// ordinals numbers the point-to-point messages of a rank, per peer,
// direction and tag, in issue order: the receiver matches a frame to its
// message by its number. Whoever holds the rank's turn numbers (the rank
// actor, or an issuer while the turn is lent, see Lease): the turn's
// hand-overs order the two.
type ordinals struct {
	next map[ordinalKey]uint64 // made by the first message: a rank of collectives needs none
}

type ordinalKey struct {
	peer int
	send bool
	tag  uint32
}

// number numbers req's messages.
func (o *ordinals) number(req *collective.Request) {
	for i := range req.P2P {
		m := &req.P2P[i]
		k := ordinalKey{peer: m.Peer, send: m.Send, tag: m.Tag}
		if o.next == nil {
			o.next = map[ordinalKey]uint64{}
		}
		m.Ordinal = o.next[k]
		o.next[k]++
	}
}
