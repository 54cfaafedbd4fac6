package simulation

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"reflect"

	"github.com/asynkron/protoactor-go/actor"
)

// Trace fingerprints a run: every message an actor receives adds (virtual
// time, receiving actor, message type) to a 64-bit FNV-1a hash, so that
// two runs of one seed can be compared with one number.
type Trace struct {
	loop   *Loop
	h      hash.Hash64
	buf    []byte
	events int64
}

func newTrace(l *Loop) *Trace { return &Trace{loop: l, h: fnv.New64a()} }

// Hash is the fingerprint of the events so far.
func (t *Trace) Hash() uint64 { return t.h.Sum64() }

// Events counts the events so far.
func (t *Trace) Events() int64 { return t.events }

// add records that who is handed msg.
func (t *Trace) add(who string, msg any) {
	if env, ok := msg.(*actor.MessageEnvelope); ok {
		msg = env.Message
	}
	kind := reflect.TypeOf(msg).String()
	t.buf = binary.LittleEndian.AppendUint64(t.buf[:0], uint64(t.loop.Elapsed()))
	t.buf = append(t.buf, who...)
	t.buf = append(t.buf, 0)
	t.buf = append(t.buf, kind...)
	t.h.Write(t.buf)
	t.events++
}
