package simulation

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/actors/agree"
)

// Agreement is how a run's agreement (Config.Agree) ended.
type Agreement struct {
	Value    agree.Value `json:"value"`    // the first decision seen; every other must equal it
	Deciders int         `json:"deciders"` // ranks that decided
	Frames   int64       `json:"frames"`   // frames the network carried from the first rank's start on
}

// agreeFlags is what rank i proposes: one bit of its own, so the AND
// shows whose proposals the decision took.
func agreeFlags(i int) uint64 { return ^(uint64(1) << (i % 64)) }

// agree has rank i run the agreement, once its operations are over.
func (r *run) agree(i int) {
	if r.agreeFrom < 0 {
		r.agreeFrom = r.net.frames
	}
	r.comms[i].AgreeAsync(agreeFlags(i), func(flags uint64, failed []int, err error) {
		if err != nil || r.net.crashed[i] {
			return
		}
		r.decided[i] = &agree.Value{Flags: flags, Failed: failed}
		r.last = max(r.last, r.loop.Elapsed())
		if r.cfg.AfterShrink == 0 {
			return
		}
		// As a training loop would: shrink, which agrees again on who
		// failed, and go on there.
		r.comms[i].ShrinkAsync(context.Background(), func(c *gocomms.Comm, err error) {
			if err == nil && !r.net.crashed[i] {
				r.afterShrink(c)
			}
		})
	})
}

// agreement checks the invariants of agreement: every rank that did not
// crash decided, every decision is the same, its failed ranks are ones a
// fault touched, and its flags hold every survivor's proposal.
func (r *run) agreement(res *Result) {
	if r.decided == nil {
		return
	}
	a := &Agreement{Frames: r.net.frames - r.agreeFrom}
	var first *agree.Value
	survivors, all := ^uint64(0), ^uint64(0)
	for i, v := range r.decided {
		all &= agreeFlags(i)
		if !r.net.crashed[i] {
			survivors &= agreeFlags(i)
		}
		switch {
		case v == nil && !r.net.crashed[i]:
			res.Violations = append(res.Violations, fmt.Sprintf("rank %d: the agreement never decided", i))
		case v == nil:
		case first == nil:
			first = v
			a.Deciders++
		case v.Flags != first.Flags || !slices.Equal(v.Failed, first.Failed):
			res.Violations = append(res.Violations, fmt.Sprintf("rank %d decided %+v, another rank %+v", i, *v, *first))
		default:
			a.Deciders++
		}
	}
	if first != nil {
		a.Value = *first
		if first.Flags&^survivors != 0 || all&^first.Flags != 0 {
			res.Violations = append(res.Violations, fmt.Sprintf("agreed flags %x lie outside the survivors' %x and everyone's %x", first.Flags, survivors, all))
		}
		for _, f := range first.Failed {
			if !r.net.crashed[f] && !slices.ContainsFunc(r.cfg.Faults, func(x Fault) bool { return !x.Kind.Harmless() && x.involves(f) }) {
				res.Violations = append(res.Violations, fmt.Sprintf("agreed that rank %d failed, which no fault touched", f))
			}
		}
	}
	res.Agreement = a
}
