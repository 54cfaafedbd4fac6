package link

import (
	"slices"
	"sync"

	"github.com/gocomms/gocomms/transport"
)

// strayKept bounds the ended collectives Strays remembers: a stray frame
// comes from a peer still in a collective this rank has just finished.
const strayKept = 16

// Strays is shared by the planes of a rank's links. It knows the
// collective running here and those that ended, so that a frame of one
// that no step here takes (the plane it came on is not the collective's,
// or the collective ended) is answered instead of dropped: its sender's
// call differs from this rank's (another root, another collective), and
// it may wait for a frame this rank's schedule never sends, or send to
// ranks that never look. Report gets the stray frame's peer and header,
// the signature of this rank's collective, and the report of its failure
// here (nil while it runs, or if it succeeded); it must not block.
//
// Stale, if set, says of a control frame that it brings the rank nothing
// new: the word of a failure the rank has heard of and acted on. The
// transport's goroutine drops such a frame instead of posting it to the
// rank, which spares a failure's flood a message for every frame but the
// first of each rank. It must not block.
type Strays struct {
	Report func(peer int, h transport.Header, ours uint64, failure []byte)
	Stale  func(h transport.Header, payload []byte) bool

	mu      sync.Mutex // taken before a plane's own
	running outcome
	// ended is by seq modulo strayKept, grown as far as seqs reach: a
	// communicator that ran one collective keeps room for one.
	ended []outcome
	// holding are the planes that keep early frames, which a collective's
	// start or end may answer; a plane leaves once it keeps none, so that
	// these walk only planes whose peers ran ahead.
	holding []*Plane
}

// outcome is how a collective went here, for its stray frames' answer.
type outcome struct {
	seq, sig uint64
	failure  []byte
	answer   bool // false: nothing answers its strays
}

// NewPlane returns the plane of a link to peer that answers its stray
// frames through s.
func (s *Strays) NewPlane(peer int) *Plane { return &Plane{peer: int32(peer), strays: s} }

// Started records that collective seq, signed sig, runs here and has
// attached to the planes of every peer it hears from: a frame of seq on
// any other plane is a stray. It answers those the planes hold.
func (s *Strays) Started(seq, sig uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = outcome{seq: seq, sig: sig, answer: true}
	s.answer(s.running)
}

// Ended records that collective seq, signed sig, ended here, before it
// lets go of its planes: it succeeded, or failed with the report its
// peers get (failure), or failed with none, whose strays go unanswered.
// It answers the frames of seq that the planes hold.
func (s *Strays) Ended(seq, sig uint64, succeeded bool, failure []byte) {
	o := outcome{seq: seq, sig: sig, failure: failure, answer: succeeded || failure != nil}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running.seq == seq {
		s.running.answer = false
	}
	i := int(seq % strayKept)
	if i >= len(s.ended) {
		s.ended = append(s.ended, make([]outcome, i+1-len(s.ended))...)
	}
	s.ended[i] = o
	if o.answer {
		s.answer(o)
	}
}

// answer answers the frames of o's collective that the planes hold, and
// lets go of the planes that then hold none. Called with s.mu held.
func (s *Strays) answer(o outcome) {
	for i := 0; i < len(s.holding); {
		p := s.holding[i]
		p.answerStrays(o)
		if !s.drop(i) {
			i++
		}
	}
}

// kept says p keeps an early frame of collective seq: it returns how seq
// goes here, if its strays are to be answered, for p to answer the frame
// itself. Between them, kept, Started and Ended answer every stray frame
// however they interleave: p appends the frame before it joins holding.
func (s *Strays) kept(p *Plane, seq uint64) (outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.mu.Lock()
	if !p.held {
		p.held = true
		s.holding = append(s.holding, p)
	}
	p.mu.Unlock()
	if o := s.running; o.answer && o.seq == seq {
		return o, true
	}
	if i := int(seq % strayKept); i < len(s.ended) {
		o := s.ended[i]
		return o, o.answer && o.seq == seq
	}
	return outcome{}, false
}

// release lets go of p if it keeps no early frame.
func (s *Strays) release(p *Plane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.holding, p); i >= 0 {
		s.drop(i)
	}
}

// drop removes holding[i] if it keeps no early frame, and reports whether
// it did; the last plane takes its place. Called with s.mu held.
func (s *Strays) drop(i int) bool {
	p := s.holding[i]
	p.mu.Lock()
	empty := len(p.early) == 0
	if empty {
		p.held = false
	}
	p.mu.Unlock()
	if !empty {
		return false
	}
	last := len(s.holding) - 1
	s.holding[i] = s.holding[last]
	s.holding[last] = nil
	s.holding = s.holding[:last]
	return true
}

// answerStrays answers and releases the early frames of the collective
// that goes as o says.
func (p *Plane) answerStrays(o outcome) {
	var stray []transport.Header
	p.mu.Lock()
	p.early = slices.DeleteFunc(p.early, func(f transport.Frame) bool {
		if f.Header.Seq != o.seq {
			return false
		}
		stray = append(stray, f.Header)
		transport.Release(f)
		return true
	})
	p.mu.Unlock()
	for _, h := range stray {
		p.strays.Report(p.Peer(), h, o.sig, o.failure)
	}
}
