package collective

import (
	"slices"

	"github.com/gocomms/gocomms/transport"
)

// heldFrames are the frames receiving steps wait to run from, from each
// one's arrival until its step runs, sorted by step. Few are held at a
// time, where a schedule has tens or thousands of steps: a slice by step
// would keep a frame's room for every step of every rank a simulation
// runs at once.
type heldFrames []heldFrame

type heldFrame struct {
	step  int
	frame transport.Frame
}

// search returns where step's frame is, or would be.
func (h heldFrames) search(step int) (int, bool) {
	return slices.BinarySearchFunc(h, step, func(f heldFrame, step int) int { return f.step - step })
}

// put holds f for step.
func (h *heldFrames) put(step int, f transport.Frame) {
	i, found := h.search(step)
	if found {
		(*h)[i].frame = f
		return
	}
	*h = slices.Insert(*h, i, heldFrame{step, f})
}

// of returns step's frame, nil if none is held.
func (h heldFrames) of(step int) *transport.Frame {
	if i, found := h.search(step); found {
		return &h[i].frame
	}
	return nil
}

// take removes step's frame and returns it, the zero frame if none was
// held.
func (h *heldFrames) take(step int) transport.Frame {
	i, found := h.search(step)
	if !found {
		return transport.Frame{}
	}
	f := (*h)[i].frame
	*h = slices.Delete(*h, i, i+1)
	return f
}
