package simulation

import (
	"reflect"

	"github.com/asynkron/protoactor-go/actor"
)

// Trace fingerprints a run: every message an actor receives adds (virtual
// time, receiving actor, message type) to a 64-bit hash, so that two runs
// of one seed can be compared with one number.
//
// The hash is FNV-1a over 64-bit words rather than bytes: each event adds
// three words, the time, a hash of the actor's name (computed once, by its
// mailbox) and a hash of the message type's name (computed once per
// type). Names, not addresses, so that a replay matches across builds,
// -race included; words, so that an event reads no cold name.
type Trace struct {
	loop   *Loop
	h      uint64
	kinds  map[reflect.Type]uint64
	events int64
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func newTrace(l *Loop) *Trace {
	return &Trace{loop: l, h: fnvOffset, kinds: map[reflect.Type]uint64{}}
}

// Hash is the fingerprint of the events so far.
func (t *Trace) Hash() uint64 { return t.h }

// Events counts the events so far.
func (t *Trace) Events() int64 { return t.events }

// add records that the actor whose name hashes to who is handed msg.
func (t *Trace) add(who uint64, msg any) {
	if env, ok := msg.(*actor.MessageEnvelope); ok {
		msg = env.Message
	}
	typ := reflect.TypeOf(msg)
	kind, ok := t.kinds[typ]
	if !ok {
		kind = nameHash(typ.String())
		t.kinds[typ] = kind
	}
	for _, w := range [3]uint64{uint64(t.loop.Elapsed()), who, kind} {
		t.h = (t.h ^ w) * fnvPrime
	}
	t.events++
}

// nameHash is the FNV-1a hash of a name.
func nameHash(name string) uint64 {
	h := uint64(fnvOffset)
	for i := range len(name) {
		h = (h ^ uint64(name[i])) * fnvPrime
	}
	return h
}
