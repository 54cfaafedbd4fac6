package algorithms

import (
	"cmp"
	"container/heap"
	"fmt"
)

// Model is an alpha-beta model of a network, the simulator's in small.
// Every rank has a send port and a receive port, each taking one message
// at a time: a message of b bytes leaves once the sender's port is free,
// and occupies it for Overhead (the software's cost per message) plus
// b/BytesPerSecond; its last byte lands Alpha later, once the receiver's
// port has taken what came before it. Between ranks of one node (Spec's
// LocalSize) the Local figures apply, where set. Local steps (copies and
// reductions) cost nothing: the model is the network's.
type Model struct {
	Alpha          float64 // seconds from a message's last byte leaving to its landing
	Overhead       float64 // seconds of the sender's time per message
	BytesPerSecond float64 // per port

	LocalAlpha          float64 // 0: Alpha
	LocalBytesPerSecond float64 // 0: BytesPerSecond
}

// Estimate returns the seconds one run of a collective takes under m:
// specs hold every rank's Spec, as for Check, and the estimate is when the
// last rank finishes, every rank starting at once. It runs the schedules
// themselves on the model, so that it holds for any schedule, registered
// ones included, with its chunking and pipelining, rather than for a
// formula of its rounds.
func Estimate(specs []Spec, m Model) (float64, error) {
	if m.BytesPerSecond <= 0 || m.Alpha < 0 || m.Overhead < 0 || m.LocalAlpha < 0 || m.LocalBytesPerSecond < 0 {
		return 0, fmt.Errorf("%w: model %+v: bandwidth must be positive, latencies not negative", ErrBadSpec, m)
	}
	scheds, err := buildAll(specs)
	if err != nil {
		return 0, err
	}
	e := &estimator{
		m: m, specs: specs, scheds: scheds,
		progs:    make([]*Progress, len(specs)),
		sendFree: make([]float64, len(specs)),
		recvFree: make([]float64, len(specs)),
	}
	for r, sc := range scheds {
		e.progs[r] = NewProgress(sc)
		e.ready(r, 0, e.progs[r].Start(nil))
	}
	for e.events.Len() > 0 {
		ev := heap.Pop(&e.events).(timed)
		e.now = ev.at
		p := e.progs[ev.rank]
		switch ev.kind {
		case reaches:
			// The receiving port takes messages in the order they reach it.
			land := max(e.now, e.recvFree[ev.rank]+ev.wire)
			e.recvFree[ev.rank] = land
			ev.kind, ev.at = lands, land
			e.at(ev)
		case lands:
			ready, _, err := p.Arrive(ev.peer, ev.tag, nil)
			if err != nil {
				return 0, fmt.Errorf("rank %d: %w", ev.rank, err)
			}
			e.ready(ev.rank, e.now, ready)
		default:
			e.ready(ev.rank, e.now, p.Complete(ev.step, nil))
		}
	}
	for r, p := range e.progs {
		if !p.Done() {
			return 0, fmt.Errorf("rank %d never finishes: it waits for %v", r, p.Waiting(nil))
		}
	}
	return e.now, nil
}

// estimator is one Estimate's state.
type estimator struct {
	m        Model
	specs    []Spec
	scheds   []*Schedule
	progs    []*Progress
	sendFree []float64 // when each rank's send port is next free
	recvFree []float64 // when each rank's receive port has taken what reached it
	events   timeline
	now      float64
	seq      uint64
}

// ready starts rank r's ready steps at time t: a send occupies the send
// port and schedules its message reaching the receiver (whose port it
// then takes as long, overhead included, a simplification); every other
// step completes at once.
func (e *estimator) ready(r int, t float64, steps []int) {
	elem := float64(e.specs[r].ElemSize)
	for _, i := range steps {
		st := &e.scheds[r].Steps[i]
		if st.Prim != Send {
			e.at(timed{at: t, rank: r, step: i})
			continue
		}
		alpha, bw := e.link(r, st.Peer)
		wire := e.m.Overhead + float64(st.Src.Len)*elem/bw
		leave := max(t, e.sendFree[r])
		e.sendFree[r] = leave + wire
		e.at(timed{at: leave + wire, rank: r, step: i})
		e.at(timed{at: leave + wire + alpha, rank: st.Peer, kind: reaches, peer: r, tag: st.Tag, wire: wire})
	}
}

// link is the latency and bandwidth between ranks a and b.
func (e *estimator) link(a, b int) (alpha, bytesPerSecond float64) {
	l := e.specs[a].LocalSize
	if l > 0 && e.specs[a].Size%l == 0 && a/l == b/l {
		return cmp.Or(e.m.LocalAlpha, e.m.Alpha), cmp.Or(e.m.LocalBytesPerSecond, e.m.BytesPerSecond)
	}
	return e.m.Alpha, e.m.BytesPerSecond
}

func (e *estimator) at(ev timed) {
	ev.seq = e.seq
	e.seq++
	heap.Push(&e.events, ev)
}

// timed is an event of the estimate: a step completing, or a message
// reaching its receiver's port, or landing.
type timed struct {
	at   float64
	seq  uint64 // ties in the order they were scheduled
	rank int
	kind eventKind
	step int // completes
	peer int // reaches, lands: the sender, the tag and the time on a port
	tag  int
	wire float64
}

type eventKind uint8

const (
	completes eventKind = iota
	reaches
	lands
)

type timeline []timed

func (t timeline) Len() int { return len(t) }
func (t timeline) Less(i, j int) bool {
	if t[i].at != t[j].at {
		return t[i].at < t[j].at
	}
	return t[i].seq < t[j].seq
}
func (t timeline) Swap(i, j int) { t[i], t[j] = t[j], t[i] }
func (t *timeline) Push(x any)   { *t = append(*t, x.(timed)) }
func (t *timeline) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}
