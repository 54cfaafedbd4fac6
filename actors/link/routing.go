package link

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/transport"
)

// routing is where a link's inbound operation frames go: the routes of
// the operations running, and the stash of frames that came before their
// operation's route. A link has a route or two at a time, so both are
// slices searched in order rather than maps: smaller (a simulation keeps
// millions of links), and walked in one order on every run. A nil
// routing has nothing routed or stashed: its methods that only read or
// drop work on it.
type routing struct {
	routes []route
	stash  []stashed
	// spare holds the frame arrays of stash entries gone, for keep to
	// reuse: most operations find a frame or two that came first.
	spare [][]transport.Frame
}

// spareKept bounds the spare arrays kept.
const spareKept = 8

// route is where the frames of a key go, and how many more will; a
// negative count never runs out, and waits says whether its actor waits
// for frames all the same (Expect).
type route struct {
	key   Key
	to    *actor.PID
	left  int
	waits bool
}

// stashed holds the frames of a key that no route has taken yet.
type stashed struct {
	key    Key
	frames []transport.Frame
}

// take returns the route of key and counts one frame handed over on it;
// the route ends with its last frame (ended).
func (rt *routing) take(key Key) (to *actor.PID, ok, ended bool) {
	if rt == nil {
		return nil, false, false
	}
	for i := range rt.routes {
		if r := &rt.routes[i]; r.key == key {
			to = r.to
			if r.left < 0 {
				return to, true, false
			}
			if r.left--; r.left == 0 {
				rt.routes = slices.Delete(rt.routes, i, i+1)
				ended = true
			}
			return to, true, ended
		}
	}
	return nil, false, false
}

// add routes the next frames frames of key to to, and returns the stashed
// frames of key it takes at once: up to that many, oldest first, valid
// until the next keep. Frames beyond the count stay stashed.
func (rt *routing) add(key Key, to *actor.PID, frames int) []transport.Frame {
	rt.unroute(key)
	var taken []transport.Frame
	if i := rt.stashed(key); i >= 0 {
		s := &rt.stash[i]
		n := len(s.frames)
		if frames >= 0 {
			n = min(n, frames)
		}
		all := s.frames[:n] // spared whole: it grew to what a key stashes
		taken, s.frames = all[:n:n], s.frames[n:]
		if len(s.frames) == 0 {
			rt.spareArray(all)
			rt.stash = slices.Delete(rt.stash, i, i+1)
		}
	}
	if left := frames - len(taken); frames < 0 || left > 0 {
		rt.routes = append(rt.routes, route{key: key, to: to, left: left})
	}
	return taken
}

// routed returns the routes of the operations running.
func (rt *routing) routed() []route {
	if rt == nil {
		return nil
	}
	return rt.routes
}

// expecting reports whether an operation waits for frames here: a route
// that runs out, or a window's while it waits for replies.
func (rt *routing) expecting() bool {
	if rt == nil {
		return false
	}
	for _, r := range rt.routes {
		if r.left > 0 || r.waits {
			return true
		}
	}
	return false
}

// expect records whether the actor of key's route waits for frames.
func (rt *routing) expect(key Key, on bool) {
	if rt == nil {
		return
	}
	for i := range rt.routes {
		if rt.routes[i].key == key {
			rt.routes[i].waits = on
			return
		}
	}
}

// unroute ends the route of key, if there is one.
func (rt *routing) unroute(key Key) {
	if rt == nil {
		return
	}
	for i := range rt.routes {
		if rt.routes[i].key == key {
			rt.routes = slices.Delete(rt.routes, i, i+1)
			return
		}
	}
}

// keep stashes f until a route of key takes it, with a payload of its
// own: its operation may start much later.
func (rt *routing) keep(key Key, f transport.Frame) {
	f = transport.Detach(f)
	if i := rt.stashed(key); i >= 0 {
		rt.stash[i].frames = append(rt.stash[i].frames, f)
		return
	}
	var fs []transport.Frame
	if n := len(rt.spare); n > 0 {
		fs, rt.spare = rt.spare[n-1], rt.spare[:n-1]
		clear(fs[:cap(fs)]) // what it held was handed over: let it go
	}
	rt.stash = append(rt.stash, stashed{key: key, frames: append(fs, f)})
}

// spareArray keeps the array of fs, empty, for keep.
func (rt *routing) spareArray(fs []transport.Frame) {
	if cap(fs) > 0 && len(rt.spare) < spareKept {
		rt.spare = append(rt.spare, fs[:0])
	}
}

func (rt *routing) stashed(key Key) int {
	for i := range rt.stash {
		if rt.stash[i].key == key {
			return i
		}
	}
	return -1
}

// discard gives back the payloads of the stashed frames that drop says to
// drop, and forgets them.
func (rt *routing) discard(drop func(Key) bool) {
	if rt == nil {
		return
	}
	rt.stash = slices.DeleteFunc(rt.stash, func(s stashed) bool {
		if !drop(s.key) {
			return false
		}
		for _, f := range s.frames {
			transport.Release(f)
		}
		clear(s.frames)
		rt.spareArray(s.frames)
		return true
	})
}
