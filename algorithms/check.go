package algorithms

import (
	"errors"
	"fmt"
	"slices"
)

// Check proves the schedules of one collective, specs holding every
// rank's Spec as that rank passes it (EveryRank makes them from one).
//
// It builds every rank's schedule and checks them without running them:
// regions in bounds, Input never written, tags dense, chunks no larger
// than the Spec allows, every Send matched by one receive of the same
// length. Then it runs all of them together on symbolic values, under
// checkOrders delivery orders drawn from seed: every output element must
// hold exactly what the collective means (for a reduction, every rank's
// input element once; otherwise the right copy); no step may read an
// element never written; no two steps that touch an element, one writing
// it, may be runnable at once; and every rank must finish with no message
// left over, so nothing waits on what waits on it. Last, it loses one
// message, drawn too, and requires its receiver to stay unfinished and
// to name the sender as the rank it waits for.
//
// The runs are a function of specs and seed: a failure replays.
func Check(specs []Spec, seed uint64) error {
	for k := range uint64(checkOrders) {
		if _, err := simulate(specs, simOptions{seed: seed + k<<48}); err != nil {
			return fmt.Errorf("delivery order %d: %w", k, err)
		}
	}
	scheds, err := buildAll(specs)
	if err != nil {
		return err
	}
	ms := messages(scheds)
	if len(ms) == 0 {
		return nil
	}
	drop := ms[(&orders{seed ^ 0x5851f42d4c957f2d}).intn(len(ms))]
	if _, err := simulate(specs, simOptions{seed: seed, drop: &drop}); err != nil {
		return fmt.Errorf("losing message %d→%d tag %d: %w", drop.from, drop.to, drop.tag, err)
	}
	return nil
}

// checkOrders is how many delivery orders Check tries.
const checkOrders = 3

// orders draws the checker's choices: splitmix64, a function of the seed
// alone, so that a failing check replays; the package takes no
// randomness from outside.
type orders struct{ state uint64 }

// intn returns a number in [0, n), n > 0; the modulo's bias is of no
// concern for picking the next event.
func (o *orders) intn(n int) int {
	o.state += 0x9e3779b97f4a7c15
	z := o.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int((z ^ z>>31) % uint64(n))
}

// EveryRank returns base as each of its base.Size ranks passes it. An
// AllToAll's SendCounts and RecvCounts are every rank's alike, which
// agree across ranks only when they are uniform: build a V form's specs
// rank by rank.
func EveryRank(base Spec) []Spec {
	specs := make([]Spec, base.Size)
	for r := range specs {
		specs[r] = base
		specs[r].Rank = r
	}
	return specs
}

// The checker's symbolic network, in the spirit of etcd's raft_test
// network: the schedules of all ranks of a collective run together in one
// goroutine. Every element holds a symbolic value (which rank's input,
// which block, which index it came from; for reductions the multiset of
// contributions), and a seeded source picks the next event among
// everything the dependencies allow: starting a ready step, finishing a
// started one, or delivering any in-flight message (links are not FIFO).

// contrib names one input element: rank, block, index.
type contrib uint64

func mkContrib(rank, block, idx int) contrib {
	return contrib(rank)<<42 | contrib(block)<<21 | contrib(idx)
}

func (c contrib) String() string {
	return fmt.Sprintf("r%d.b%d[%d]", c>>42, c>>21&(1<<21-1), c&(1<<21-1))
}

// value is the multiset of contributions an element holds; nil means the
// element was never written. Values are immutable once stored.
type value []contrib

func combine(a, b value) value {
	v := make(value, 0, len(a)+len(b))
	return append(append(v, a...), b...)
}

// sameMultiset reports whether v holds exactly want (want sorted).
func sameMultiset(v value, want []contrib) bool {
	if len(v) != len(want) {
		return false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return slices.Equal(s, want)
}

type msgKey struct{ from, to, tag int }

type simMsg struct {
	msgKey
	data []value
	know uint64 // ranks the sender had heard from, transitively
}

type simRank struct {
	spec    Spec
	sched   *Schedule
	prog    *Progress
	mem     [3][][]value
	inbox   map[[2]int]simMsg // arrived, not yet consumed: (from, tag)
	know    []uint64          // per step: ranks heard from when it ran
	snap    map[int][]value   // what a started step read
	active  []int             // reported ready, not yet finished
	started []bool
}

type evKind uint8

const (
	evStart evKind = iota
	evFinish
	evDeliver
)

type event struct {
	kind       evKind
	rank, step int
	msg        simMsg
}

type simOptions struct {
	seed uint64
	drop *msgKey // a message the network loses
}

type network struct {
	ranks   []*simRank
	rng     *orders
	events  []event
	dropped bool
	opts    simOptions
	ready   []int
}

// buildAll builds every rank's schedule and checks them statically.
func buildAll(specs []Spec) ([]*Schedule, error) {
	scheds := make([]*Schedule, len(specs))
	for r, s := range specs {
		sc, err := Build(s)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		scheds[r] = sc
	}
	return scheds, checkStatic(specs, scheds)
}

// simulate runs the collective and checks the outcome against the reference.
func simulate(specs []Spec, opts simOptions) (*network, error) {
	scheds, err := buildAll(specs)
	if err != nil {
		return nil, err
	}
	n, err := run(specs, scheds, opts)
	if err != nil || opts.drop != nil {
		return n, err
	}
	for r, sr := range n.ranks {
		if !sr.prog.Done() {
			return n, fmt.Errorf("rank %d stuck with %d steps left, waiting for %v", r, sr.prog.Remaining(), sr.prog.Waiting(nil))
		}
		if len(sr.inbox) != 0 {
			return n, fmt.Errorf("rank %d has %d unconsumed messages", r, len(sr.inbox))
		}
	}
	return n, n.checkReference()
}

// run runs the schedules until no event is left, and checks only what
// each event must keep; with opts.drop, that losing it stalls its
// receiver.
func run(specs []Spec, scheds []*Schedule, opts simOptions) (*network, error) {
	n := &network{rng: &orders{opts.seed}, opts: opts}
	for r, s := range specs {
		n.ranks = append(n.ranks, newSimRank(s, scheds[r]))
	}
	for r, sr := range n.ranks {
		n.ready = sr.prog.Start(n.ready[:0])
		if err := n.becameReady(r, n.ready); err != nil {
			return n, err
		}
	}
	for len(n.events) > 0 {
		k := n.rng.intn(len(n.events))
		ev := n.events[k]
		n.events[k] = n.events[len(n.events)-1]
		n.events = n.events[:len(n.events)-1]
		var err error
		switch ev.kind {
		case evStart:
			err = n.start(ev.rank, ev.step)
		case evFinish:
			err = n.finish(ev.rank, ev.step)
		case evDeliver:
			err = n.deliver(ev.msg)
		}
		if err != nil {
			return n, err
		}
	}
	if opts.drop != nil {
		return n, n.checkDropped()
	}
	return n, nil
}

func newSimRank(s Spec, sc *Schedule) *simRank {
	sr := &simRank{
		spec:    s,
		sched:   sc,
		prog:    NewProgress(sc),
		inbox:   map[[2]int]simMsg{},
		know:    make([]uint64, len(sc.Steps)),
		snap:    map[int][]value{},
		started: make([]bool, len(sc.Steps)),
	}
	alloc := func(blocks []int) [][]value {
		m := make([][]value, len(blocks))
		for i, n := range blocks {
			m[i] = make([]value, n)
		}
		return m
	}
	sr.mem[Input] = alloc(s.Blocks(Input))
	sr.mem[Output] = alloc(s.Blocks(Output))
	sr.mem[Scratch] = alloc(sc.Scratch)
	for b, blk := range sr.mem[Input] {
		for i := range blk {
			blk[i] = value{mkContrib(s.Rank, b, i)}
		}
	}
	// InPlace: the caller's input is already in Output.
	switch {
	case s.InPlace && (s.Kind == AllReduce || s.Kind == Reduce && s.Rank == s.Root):
		copy(sr.mem[Output][0], sr.mem[Input][0])
	case s.InPlace && s.Kind == AllGather:
		copy(sr.mem[Output][s.Rank], sr.mem[Input][0])
	case s.Kind == Broadcast && s.Rank == s.Root:
		for i := range sr.mem[Output][0] {
			sr.mem[Output][0][i] = value{mkContrib(s.Rank, 0, i)}
		}
	}
	return sr
}

func (sr *simRank) region(r Region) []value {
	return sr.mem[r.Buf][r.Block][r.Off:r.End()]
}

// conflicts reports whether two steps touch a common element and at least one
// of them writes it.
func conflicts(a, b *Step) bool {
	ar, aok := a.Reads()
	aw, awk := a.Writes()
	br, bok := b.Reads()
	bw, bwk := b.Writes()
	return awk && (bok && aw.Overlaps(br) || bwk && aw.Overlaps(bw)) ||
		bwk && aok && bw.Overlaps(ar)
}

// becameReady queues steps Progress just reported, checking first that none
// conflicts with a step of the same rank that is also runnable: that would be
// a data race the dependencies failed to order.
func (n *network) becameReady(r int, steps []int) error {
	sr := n.ranks[r]
	for _, i := range steps {
		st := &sr.sched.Steps[i]
		for _, a := range sr.active {
			if conflicts(st, &sr.sched.Steps[a]) {
				return fmt.Errorf("rank %d: race: steps %d (%v) and %d (%v) runnable together", r, a, sr.sched.Steps[a], i, *st)
			}
		}
		for _, d := range st.Deps {
			if !(sr.prog.state[d]&completed != 0) {
				return fmt.Errorf("rank %d: step %d ready before its dep %d", r, i, d)
			}
		}
		if st.Prim.Receives() {
			if _, ok := sr.inbox[[2]int{st.Peer, st.Tag}]; !ok {
				return fmt.Errorf("rank %d: step %d ready before its message arrived", r, i)
			}
		}
		sr.active = append(sr.active, i)
		n.events = append(n.events, event{kind: evStart, rank: r, step: i})
	}
	return nil
}

func (n *network) start(r, i int) error {
	sr := n.ranks[r]
	st := &sr.sched.Steps[i]
	if sr.started[i] {
		return fmt.Errorf("rank %d: step %d started twice", r, i)
	}
	sr.started[i] = true
	know := uint64(1) << r
	for _, d := range st.Deps {
		know |= sr.know[d]
	}
	if st.Prim.Receives() {
		know |= sr.inbox[[2]int{st.Peer, st.Tag}].know
	}
	sr.know[i] = know
	if src, ok := st.Reads(); ok {
		vals := slices.Clone(sr.region(src))
		for k, v := range vals {
			if v == nil {
				return fmt.Errorf("rank %d: step %d (%v) reads unwritten element %d", r, i, *st, src.Off+k)
			}
		}
		sr.snap[i] = vals
	}
	if st.Prim == Accumulate {
		for k, v := range sr.region(st.Dst) {
			if v == nil {
				return fmt.Errorf("rank %d: step %d (%v) accumulates into unwritten element %d", r, i, *st, st.Dst.Off+k)
			}
		}
	}
	n.events = append(n.events, event{kind: evFinish, rank: r, step: i})
	return nil
}

func (n *network) finish(r, i int) error {
	sr := n.ranks[r]
	st := &sr.sched.Steps[i]
	vals := sr.snap[i]
	delete(sr.snap, i)
	switch st.Prim {
	case Send:
		m := simMsg{msgKey: msgKey{from: r, to: st.Peer, tag: st.Tag}, data: vals, know: sr.know[i]}
		if d := n.opts.drop; d != nil && *d == m.msgKey {
			n.dropped = true
		} else {
			n.events = append(n.events, event{kind: evDeliver, msg: m})
		}
	case Recv, RecvReduce:
		key := [2]int{st.Peer, st.Tag}
		m := sr.inbox[key]
		delete(sr.inbox, key)
		if len(m.data) != st.Dst.Len {
			return fmt.Errorf("rank %d: step %d expects %d elements, got %d", r, i, st.Dst.Len, len(m.data))
		}
		dst := sr.region(st.Dst)
		for k := range dst {
			if st.Prim == Recv {
				dst[k] = m.data[k]
			} else {
				dst[k] = combine(vals[k], m.data[k])
			}
		}
	case Copy:
		copy(sr.region(st.Dst), vals)
	case Accumulate:
		dst := sr.region(st.Dst)
		for k := range dst {
			dst[k] = combine(dst[k], vals[k])
		}
	}
	k := slices.Index(sr.active, i)
	sr.active = slices.Delete(sr.active, k, k+1)
	n.ready = sr.prog.Complete(i, n.ready[:0])
	return n.becameReady(r, n.ready)
}

func (n *network) deliver(m simMsg) error {
	sr := n.ranks[m.to]
	var err error
	var step int
	n.ready, step, err = sr.prog.Arrive(m.from, m.tag, n.ready[:0])
	if err != nil {
		return err
	}
	if st := sr.sched.Steps[step]; st.Peer != m.from || st.Tag != m.tag {
		return fmt.Errorf("rank %d: message %v matched step %d (%v)", m.to, m.msgKey, step, st)
	}
	sr.inbox[[2]int{m.from, m.tag}] = m
	return n.becameReady(m.to, n.ready)
}

// checkDropped: losing one message must leave its receiver unfinished and
// waiting for the sender; nothing may complete falsely.
func (n *network) checkDropped() error {
	d := n.opts.drop
	if !n.dropped {
		return fmt.Errorf("message %v was never sent", *d)
	}
	sr := n.ranks[d.to]
	if sr.prog.Done() {
		return fmt.Errorf("rank %d completed without message %v", d.to, *d)
	}
	if !slices.Contains(sr.prog.Waiting(nil), d.from) {
		return fmt.Errorf("rank %d does not report waiting for rank %d (waiting %v)", d.to, d.from, sr.prog.Waiting(nil))
	}
	return nil
}

// checkReference compares every Output element with a deliberately simple
// statement of what the collective means.
func (n *network) checkReference() error {
	p := len(n.ranks)
	everyRank := func(block, i int) []contrib {
		w := make([]contrib, p)
		for q := range w {
			w[q] = mkContrib(q, block, i)
		}
		slices.Sort(w)
		return w
	}
	for r, sr := range n.ranks {
		s := sr.spec
		out := sr.mem[Output]
		expect := func(b, i int, want []contrib) error {
			if !sameMultiset(out[b][i], want) {
				return fmt.Errorf("rank %d: %v output block %d element %d = %v, want %v", r, s.Kind, b, i, out[b][i], want)
			}
			return nil
		}
		var err error
		each := func(b int, want func(i int) []contrib) {
			for i := 0; i < len(out[b]) && err == nil; i++ {
				err = expect(b, i, want(i))
			}
		}
		switch s.Kind {
		case AllReduce:
			each(0, func(i int) []contrib { return everyRank(0, i) })
		case Reduce:
			if r == s.Root {
				each(0, func(i int) []contrib { return everyRank(0, i) })
			}
		case ReduceScatter:
			each(0, func(i int) []contrib { return everyRank(r, i) })
		case Broadcast:
			each(0, func(i int) []contrib { return []contrib{mkContrib(s.Root, 0, i)} })
		case AllGather:
			for q := range p {
				each(q, func(i int) []contrib { return []contrib{mkContrib(q, 0, i)} })
			}
		case Gather:
			if r == s.Root {
				for q := range p {
					each(q, func(i int) []contrib { return []contrib{mkContrib(q, 0, i)} })
				}
			}
		case Scatter:
			each(0, func(i int) []contrib { return []contrib{mkContrib(s.Root, r, i)} })
		case AllToAll:
			for q := range p {
				each(q, func(i int) []contrib { return []contrib{mkContrib(q, r, i)} })
			}
		case Barrier:
			all := uint64(1)<<p - 1
			heard := uint64(1) << r
			for _, k := range sr.know {
				heard |= k
			}
			if heard != all {
				err = fmt.Errorf("rank %d left the barrier having heard only from %b", r, heard)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkStatic checks the schedules of all ranks without running them:
// regions in bounds, Input never written, InPlace ranks never touching
// Input, chunk limits, dense tags, well-formed deps, and every Send matched
// by exactly one receive of the same length.
func checkStatic(specs []Spec, scheds []*Schedule) error {
	links := linkLengths{sends: map[[2]int][]int{}, recvs: map[[2]int][]int{}}
	for r, sc := range scheds {
		c := rankCheck{spec: specs[r], rank: r, size: len(specs), links: links}
		if err := c.schedule(sc); err != nil {
			return err
		}
	}
	return links.matched()
}

// rankCheck checks one rank's schedule for checkStatic.
type rankCheck struct {
	spec       Spec
	rank, size int
	blocks     [3][]int // the lengths of the Input, Output and Scratch blocks
	links      linkLengths
}

// schedule checks sc as a whole, then each of its steps.
func (c *rankCheck) schedule(sc *Schedule) error {
	r, s := c.rank, c.spec
	if sc.Rank != r || sc.Size != c.size {
		return fmt.Errorf("rank %d: schedule says rank %d of %d", r, sc.Rank, sc.Size)
	}
	if sc.Algorithm == "" {
		return fmt.Errorf("rank %d: schedule has no algorithm name", r)
	}
	if err := sc.Fits(s.Blocks(Input), s.Blocks(Output)); err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	c.blocks = [3][]int{s.Blocks(Input), s.Blocks(Output), sc.Scratch}
	if used := scratchUsed(sc); !slices.Equal(used, sc.Scratch) {
		return fmt.Errorf("rank %d: scratch blocks %v but regions use %v", r, sc.Scratch, used)
	}
	for i, st := range sc.Steps {
		if err := c.step(i, st); err != nil {
			return fmt.Errorf("rank %d step %d (%v): %w", r, i, st, err)
		}
	}
	return nil
}

// scratchUsed is how much of each of sc's scratch blocks its steps'
// regions reach.
func scratchUsed(sc *Schedule) []int {
	used := make([]int, len(sc.Scratch))
	for _, st := range sc.Steps {
		for _, reg := range []Region{st.Src, st.Dst} {
			if reg.Buf == Scratch && reg.Block >= 0 && int(reg.Block) < len(used) {
				used[reg.Block] = max(used[reg.Block], reg.End())
			}
		}
	}
	return used
}

// step checks step i, st: its regions, its deps, its tag and its message.
func (c *rankCheck) step(i int, st Step) error {
	if src, ok := st.Reads(); ok {
		if err := c.region(src, st.Prim == Send); err != nil {
			return err
		}
	}
	if dst, ok := st.Writes(); ok {
		if err := c.region(dst, st.Prim == Recv); err != nil {
			return err
		}
	}
	if !slices.IsSorted(st.Deps) || len(slices.Compact(slices.Clone(st.Deps))) != len(st.Deps) {
		return errors.New("deps not sorted and unique")
	}
	if len(st.Deps) > 0 && (st.Deps[0] < 0 || int(st.Deps[len(st.Deps)-1]) >= i) {
		return errors.New("dep not an earlier step")
	}
	if err := c.links.add(c.rank, st); err != nil {
		return err
	}
	local := st.Prim == Copy || st.Prim == Accumulate
	if !local && st.Len() > c.spec.ChunkElems() {
		return fmt.Errorf("message of %d elements exceeds the chunk of %d", st.Len(), c.spec.ChunkElems())
	}
	if !local && (st.Peer < 0 || st.Peer >= c.size || st.Peer == c.rank) {
		return errors.New("bad peer")
	}
	return nil
}

// region checks a region a step reads or writes; message says the step
// sends or receives it.
func (c *rankCheck) region(reg Region, message bool) error {
	s := c.spec
	if reg.Len == 0 && !(message && s.Kind == Barrier && reg.Buf == Scratch && c.blocks[reg.Buf][reg.Block] == 0) {
		return fmt.Errorf("zero-length region %v", reg)
	}
	if reg.Buf == Input && s.InPlace && (s.Kind != Reduce || c.rank == s.Root) {
		return fmt.Errorf("in-place schedule touches Input (%v)", reg)
	}
	return nil
}

// linkLengths holds the lengths of the messages each link carries, by
// (from, to), in tag order: as its sends say, and as its receives do.
type linkLengths struct {
	sends, recvs map[[2]int][]int
}

// add records rank r's step st, if it sends or receives, and checks that
// its tag is the next on its link.
func (l linkLengths) add(r int, st Step) error {
	switch st.Prim {
	case Send:
		link := [2]int{r, st.Peer}
		l.sends[link] = append(l.sends[link], st.Src.Len)
		if st.Tag != len(l.sends[link])-1 {
			return errors.New("send tags not dense in program order")
		}
	case Recv, RecvReduce:
		link := [2]int{st.Peer, r}
		l.recvs[link] = append(l.recvs[link], st.Dst.Len)
		if st.Tag != len(l.recvs[link])-1 {
			return errors.New("receive tags not dense in program order")
		}
	}
	return nil
}

// matched checks that every send is received, and every receive sent, by
// a message of the same length.
func (l linkLengths) matched() error {
	for link, ss := range l.sends {
		rs := l.recvs[link]
		if len(ss) != len(rs) {
			return fmt.Errorf("link %d→%d: %d sends, %d receives", link[0], link[1], len(ss), len(rs))
		}
		for k := range ss {
			if ss[k] != rs[k] {
				return fmt.Errorf("link %d→%d tag %d: send of %d elements, receive of %d", link[0], link[1], k, ss[k], rs[k])
			}
		}
	}
	for link, rs := range l.recvs {
		if len(l.sends[link]) != len(rs) {
			return fmt.Errorf("link %d→%d: %d receives without sends", link[0], link[1], len(rs))
		}
	}
	return nil
}

// messages lists every message of the schedules, for drop tests.
func messages(scheds []*Schedule) []msgKey {
	var ms []msgKey
	for r, sc := range scheds {
		for _, st := range sc.Steps {
			if st.Prim == Send {
				ms = append(ms, msgKey{from: r, to: st.Peer, tag: st.Tag})
			}
		}
	}
	return ms
}
